"""The names a spec's metrics are checked against at load time are the names phases really
report: every parser's output on the recorded tool outputs, and a real kv load's metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from perflab.spec.metric_names import parser_names, probe_names
from perflab.workloads.kv import run_kv
from perflab.workloads.kv_result import kv_metric_names
from perflab.workloads.parsers import ParseError, available_parsers, get_parser

DATA = Path(__file__).parents[1] / "data" / "parsers"


def _outputs():
    for path in sorted(DATA.iterdir()):
        for parser in available_parsers():
            try:
                yield path.name, parser, get_parser(parser).parse(path.read_text())
            except ParseError:
                continue


OUTPUTS = list(_outputs())


def test_every_parser_is_exercised_by_some_recorded_output():
    assert {parser for _, parser, _ in OUTPUTS} == set(available_parsers())


@pytest.mark.parametrize("name, parser, metrics", OUTPUTS, ids=[f"{n}-{p}" for n, p, _ in OUTPUTS])
def test_parser_output_names_are_all_known(name, parser, metrics):
    names = parser_names(parser)
    assert metrics
    assert [k for k in metrics if not names.matches(k)] == []


@pytest.mark.parametrize(
    "parser, typo, expected",
    [
        ("hyperfine", "mean_sx", "mean_s"),
        ("hyperfine", "fast_mean_sx", "fast_mean_s"),
        ("memtier", "ops_per_sce", "ops_per_sec"),
        ("memtier_json", "gets_p99_latency", "gets_p99_latency_ms"),
    ],
)
def test_typos_are_caught_with_a_suggestion(parser, typo, expected):
    names = parser_names(parser)
    assert not names.matches(typo)
    assert names.suggestion(typo) == expected


def test_closed_and_open_parsers():
    assert parser_names("hyperfine").closed and parser_names("memtier_json").closed
    # memtier's table turns a column perflab does not know into a metric: such a name may exist
    assert not parser_names("memtier_text").closed


def test_probe_names_follow_the_options():
    assert probe_names({"name": "cpu"}).matches("cpu_iter_per_sec")
    assert probe_names({"name": "cpu", "coremark": "./cm"}).names == {"coremark_per_core"}
    one = probe_names({"name": "memmove", "case": "small_no_miss"})
    assert one.matches("memmove_small_no_miss_mib_per_sec") and not one.matches(
        "memmove_mib_per_sec"
    )
    assert probe_names({"name": "memmove", "case": "small_tlbmiss"}).matches("memmove_mib_per_sec")
    assert probe_names({"name": "latency"}).matches("latency_random_4k_ns")
    assert (
        probe_names({"name": "memmove", "case": "{case}"}) is None
    )  # decided per cell at run time


@pytest.mark.parametrize("open_loop", [False, True])
def test_kv_metric_names_are_what_a_real_load_reports(memcached, open_loop):
    table = {
        "server": memcached.address,
        "protocol": "memcache_text",
        "test_time": "0.3s",
        "ratio": "1:1",
        "clients": 1,
        "threads": 1,
        "key_max": 100,
    }
    if open_loop:
        table["rate"] = 2000
    result = run_kv(table)
    assert result.ok, result.error
    assert set(result.metrics()) == kv_metric_names(open_loop=open_loop, gets=True)


def test_kv_metric_names_without_gets_or_open_loop():
    closed_sets = kv_metric_names(open_loop=False, gets=False)
    assert "hit_ratio" not in closed_sets and "p99_uncorrected_latency_ms" not in closed_sets
    assert {"ops_per_sec", "p99_latency_ms", "errors"} <= closed_sets
    assert "p99_uncorrected_latency_ms" in kv_metric_names(open_loop=True, gets=False)
