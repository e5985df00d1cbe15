"""`--metric NAME` (repeatable) on `perflab compare` and `perflab report`: only those metrics in
the TLDR, the summaries, the geometric means, the warnings and the report — the same numbers
as without the option (the correction's family aside) — and an unknown name is one line
naming the metrics there are. On the MGLRU memcached experiment's published runs."""

from __future__ import annotations

import csv
import io
import json

import pytest
from cli_helpers import perflab
from testdata import MGLRU_RUNS, mglru_import

METRICS = ("ops_per_sec:higher", "p99_latency_ms:lower:ms", "avg_latency_ms:lower:ms")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("metric") / "m.db"
    for _ in range(2):  # experiments 1 and 2, for B against A
        r = perflab("import", str(MGLRU_RUNS), "--store", str(db), *mglru_import(*METRICS))
        assert r.code == 0, r.err
    return str(db)


def _json(*argv: str) -> dict:
    r = perflab(*argv)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _rows(doc: dict, key: str) -> dict[tuple[str, str, str], dict]:
    return {(x["cell"], x["variant"], x["metric"]): x for x in doc[key]}


def test_only_the_named_metrics_with_the_same_numbers(store):
    every = _json("compare", "1", "--store", store, "--json", "--correction", "none")
    some = _json(
        "compare",
        "1",
        "--store",
        store,
        "--json",
        "--correction",
        "none",
        "--metric",
        "p99_latency_ms",
        "--metric",
        "ops_per_sec",
    )
    assert [m["name"] for m in every["metrics"]] == [
        "ops_per_sec",
        "p99_latency_ms",
        "avg_latency_ms",
    ]
    assert [m["name"] for m in some["metrics"]] == ["p99_latency_ms", "ops_per_sec"]  # as asked
    for key in ("comparisons", "summaries"):
        assert {m for *_, m in _rows(some, key)} == {"p99_latency_ms", "ops_per_sec"}, key
    assert len(some["comparisons"]) == 4 and len(every["comparisons"]) == 6
    for k, row in _rows(some, "comparisons").items():
        assert row == _rows(every, "comparisons")[k]  # uncorrected: the very same numbers
    for k, row in _rows(some, "summaries").items():
        assert row == _rows(every, "summaries")[k]
    assert {s["metric"] for s in some["sweeps"]} == {"p99_latency_ms", "ops_per_sec"}
    assert all(
        w.get("metric") in ("", None, "p99_latency_ms", "ops_per_sec") for w in some["warnings"]
    )


def test_the_correction_family_is_the_named_metrics(store):
    one = _json("compare", "1", "--store", store, "--json", "--metric", "ops_per_sec")
    assert "over 2 comparisons" in one["correction_statement"]
    every = _json("compare", "1", "--store", store, "--json")
    assert "over 6 comparisons" in every["correction_statement"]


def test_terminal_markdown_and_csv(store):
    r = perflab("compare", "1", "--store", store, "--metric", "p99_latency_ms")
    assert r.code == 0, r.err
    assert "p99_latency_ms" in r.out and "ops_per_sec" not in r.out and "avg_latency" not in r.out
    md = perflab(
        "compare", "1", "--store", store, "--format", "markdown", "--metric", "ops_per_sec"
    )
    assert md.code == 0 and "ops_per_sec" in md.out and "p99_latency_ms" not in md.out
    text = perflab("compare", "1", "--store", store, "--format", "csv", "--metric", "ops_per_sec")
    rows = list(csv.DictReader(io.StringIO(text.out)))
    assert rows and {r["metric"] for r in rows} == {"ops_per_sec"}


def test_unknown_metric_is_one_line_naming_the_metrics(store):
    for argv in (
        ["compare", "1"],
        ["compare", "1", "2"],
        ["report", "1", "--json"],
    ):
        r = perflab(*argv, "--store", store, "--metric", "ops_per_sec", "--metric", "p50")
        assert r.code == 2 and r.out == ""
        assert r.err == (
            "perflab: error: no metric 'p50' "
            "(metrics: ops_per_sec, p99_latency_ms, avg_latency_ms)\n"
        ), r.err


def test_b_against_a(store):
    doc = _json("compare", "1", "2", "--store", store, "--json", "--metric", "avg_latency_ms")
    assert {c["metric"] for c in doc["comparisons"]} == {"avg_latency_ms"}
    assert len(doc["comparisons"]) == 4  # 2 cells × 2 variant pairs


def test_fail_if_worse_looks_at_the_named_metrics_only(store, tmp_path):
    """MGLRU's 110% cell is better on every metric: against it as the candidate's baseline
    (swapped: experiment 3 has mglru as its baseline) only a named metric can fail the check."""
    db = str(tmp_path / "swapped.db")
    args = mglru_import(*METRICS)
    r = perflab("import", str(MGLRU_RUNS), "--store", db, *args[:-1], "mglru")
    assert r.code == 0, r.err
    both = perflab("compare", "1", "--store", db, "--fail-if-worse", "5")
    assert both.code == 1 and "ops_per_sec" in both.err and "p99_latency_ms" in both.err
    one = perflab(
        "compare", "1", "--store", db, "--fail-if-worse", "5", "--metric", "p99_latency_ms"
    )
    assert one.code == 1 and "p99_latency_ms" in one.err and "ops_per_sec" not in one.err


def test_report_has_only_the_named_metrics(store):
    doc = _json("report", "1", "--store", store, "--json", "--metric", "ops_per_sec")
    text = json.dumps(doc)
    assert "ops_per_sec" in text
    assert "p99_latency_ms" not in text and "avg_latency_ms" not in text
    assert {c["metric"] for c in doc["comparison"]["comparisons"]} == {"ops_per_sec"}


def test_metric_no_longer_needs_scaling(tmp_path):
    """--metric alone was refused ("goes with --scaling"); it is an option of its own now."""
    r = perflab("compare", "1", "--store", str(tmp_path / "none.db"), "--metric", "x")
    assert r.code == 2 and "no store" in r.err and "--scaling" not in r.err
