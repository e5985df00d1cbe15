"""Output parsers: memtier_benchmark (table and JSON) and hyperfine (JSON), on fixtures
written to follow the tools' own printf formats, on real hyperfine output, and on
broken inputs that must fail with a one-line ParseError."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from perflab.errors import InputError
from perflab.workloads.parsers import ParseError, available_parsers, get_parser
from perflab.workloads.parsers.names import percentile_metric, slug

DATA = Path(__file__).parents[1] / "data" / "parsers"

# The MGLRU memcached experiment's per-run columns: Ops/sec, Avg. Lat., p50, p99, p99.9, KB/sec.
MGLRU_COLUMNS = [
    "ops_per_sec",
    "avg_latency_ms",
    "p50_latency_ms",
    "p99_latency_ms",
    "p999_latency_ms",
    "kb_per_sec",
]


def fixture(name: str) -> str:
    return (DATA / name).read_text()


def parse(parser: str, name: str) -> dict[str, float]:
    return get_parser(parser).parse(fixture(name))


# --- registry -------------------------------------------------------------------------


def test_registry_lists_the_parsers():
    assert available_parsers() == ["hyperfine", "memtier", "memtier_json", "memtier_text"]
    for name in available_parsers():
        parser = get_parser(name)
        assert parser.name == name
        assert parser.metrics, name
        assert all(m.name and m.unit and m.description for m in parser.metrics)


def test_unknown_parser_is_an_input_error_with_a_suggestion():
    with pytest.raises(InputError) as e:
        get_parser("memtir")
    assert "unknown parser 'memtir'" in e.value.one_line()
    assert "memtier" in e.value.one_line()
    assert "\n" not in e.value.one_line()


def test_parse_error_is_an_input_error():
    assert issubclass(ParseError, InputError)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (50, "p50_latency_ms"),
        ("99", "p99_latency_ms"),
        ("99.9", "p999_latency_ms"),
        ("99.90", "p999_latency_ms"),
        ("99.990", "p9999_latency_ms"),
        ("100.0", "p100_latency_ms"),
        (99.99, "p9999_latency_ms"),
        ("90", "p90_latency_ms"),
    ],
)
def test_percentile_metric_names(value, expected):
    assert percentile_metric(value) == expected


def test_slug():
    assert slug("slow one") == "slow_one"
    assert slug("MOVED/sec") == "moved_per_sec"
    assert slug("sleep 0.01") == "sleep_0_01"


# --- memtier table --------------------------------------------------------------------


def test_memtier_text_get_only_run_has_the_mglru_columns():
    m = parse("memtier_text", "memtier_2x_get_only.txt")
    assert {k: m[k] for k in MGLRU_COLUMNS} == {
        "ops_per_sec": 48550.71,
        "avg_latency_ms": 0.65687,
        "p50_latency_ms": 0.487,
        "p99_latency_ms": 2.847,
        "p999_latency_ms": 5.567,
        "kb_per_sec": 1812.25,
    }
    assert m["hits_per_sec"] == 48102.33 and m["misses_per_sec"] == 448.38
    assert m["gets_ops_per_sec"] == 48550.71 and m["gets_hits_per_sec"] == 48102.33
    assert m["gets_p99_latency_ms"] == 2.847
    # Sets never ran: its throughput is 0, its latencies ('---') are not metrics.
    assert m["sets_ops_per_sec"] == 0.0 and m["sets_kb_per_sec"] == 0.0
    assert not any(k.startswith("sets_") and k.endswith("_latency_ms") for k in m)
    assert "waits_avg_latency_ms" not in m and "waits_kb_per_sec" not in m


def test_memtier_text_ignores_progress_lines_of_merged_stderr():
    assert parse("memtier_text", "memtier_2x_stderr_merged.txt") == parse(
        "memtier_text", "memtier_2x_get_only.txt"
    )


def test_memtier_text_old_latency_column():
    """memtier 1.3 prints 'Latency' (the mean) and no percentiles; rows without requests print 0."""
    m = parse("memtier_text", "memtier_1.3.0_mixed.txt")
    assert m["avg_latency_ms"] == 1.6125
    assert m["sets_avg_latency_ms"] == 1.61302 and m["gets_avg_latency_ms"] == 1.61245
    assert m["ops_per_sec"] == 21795.16 and m["sets_ops_per_sec"] == 1981.37
    assert m["kb_per_sec"] == 2759.02
    assert "waits_avg_latency_ms" not in m  # 0.00000 for a type that never ran is no measurement
    assert not any(k.startswith("p") for k in m)


def test_memtier_text_run_count_reads_the_aggregated_average():
    m = parse("memtier_text", "memtier_2x_run_count3.txt")
    assert m["ops_per_sec"] == 99500.00  # not run 1's, nor BEST's 101000.00
    assert m["p90_latency_ms"] == 1.51453
    assert m["p9999_latency_ms"] == 6.02803  # header 'p99.990 Latency'
    assert m["sets_p50_latency_ms"] == 0.9027
    assert m["gets_misses_per_sec"] == 4975.0


def test_memtier_text_arbitrary_commands_rows():
    m = parse("memtier_text", "memtier_2x_arbitrary_commands.txt")
    assert m["hsets_ops_per_sec"] == 61234.5 and m["hgets_p999_latency_ms"] == 2.895
    assert m["ops_per_sec"] == 122464.6 and m["p50_latency_ms"] == 0.779
    assert "hits_per_sec" not in m


def test_memtier_text_unknown_one_word_column_is_kept():
    text = fixture("memtier_2x_arbitrary_commands.txt").replace("      KB/sec", "   Errors/sec")
    m = get_parser("memtier_text").parse(text)
    assert m["errors_per_sec"] == 13579.89 and "kb_per_sec" not in m


def test_memtier_text_takes_the_last_all_stats_block():
    populate = fixture("memtier_1.3.0_mixed.txt")
    access = fixture("memtier_2x_get_only.txt")
    assert get_parser("memtier_text").parse(populate + access)["ops_per_sec"] == 48550.71


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no memtier_benchmark results found"),
        ("Connection error: Connection refused\n", "no memtier_benchmark results found"),
    ],
)
def test_memtier_text_missing_table(text, needle):
    with pytest.raises(ParseError) as e:
        get_parser("memtier_text").parse(text)
    assert needle in e.value.message and "\n" not in e.value.one_line()


def test_memtier_text_per_run_tables_without_average_is_cut_short():
    text = fixture("memtier_2x_run_count3.txt")
    text = text[: text.index("\n\nBEST RUN RESULTS")]
    with pytest.raises(ParseError) as e:
        get_parser("memtier_text").parse(text)
    assert "'RUN #1 RESULTS'" in e.value.message and "AGGREGATED" in e.value.message


def test_memtier_text_wrong_number_of_values():
    text = fixture("memtier_2x_get_only.txt").replace("1812.25 \nWaits", "\nWaits")
    with pytest.raises(ParseError) as e:
        get_parser("memtier_text").parse(text)
    assert "row 'Gets'" in e.value.message and "7 values for 8 columns" in e.value.message


def test_memtier_text_non_numeric_value():
    text = fixture("memtier_2x_get_only.txt").replace(
        "48550.71     48102.33", "   n/a       48102.33", 1
    )
    with pytest.raises(ParseError) as e:
        get_parser("memtier_text").parse(text)
    assert "'n/a'" in e.value.message


def test_memtier_text_without_totals_row():
    text = "".join(
        line
        for line in fixture("memtier_2x_get_only.txt").splitlines(True)
        if not line.startswith("Totals")
    )
    with pytest.raises(ParseError, match="no 'Totals' row"):
        get_parser("memtier_text").parse(text)


# --- memtier JSON ---------------------------------------------------------------------


def test_memtier_json_get_only():
    m = parse("memtier_json", "memtier_2x_get_only.json")
    assert {k: m[k] for k in MGLRU_COLUMNS} == {
        "ops_per_sec": 48550.71,
        "avg_latency_ms": 0.657,
        "p50_latency_ms": 0.487,
        "p99_latency_ms": 2.847,
        "p999_latency_ms": 5.567,
        "kb_per_sec": 1812.25,
    }
    assert m["requests"] == 971014 and m["duration_ms"] == 20002
    assert m["min_latency_ms"] == 0.031 and m["max_latency_ms"] == 9.215
    assert m["kb_rx_per_sec"] == 1087.35 and m["kb_tx_per_sec"] == 724.9
    assert m["gets_hits_per_sec"] == 48065.2
    assert m["sets_ops_per_sec"] == 0.0
    assert "sets_p99_latency_ms" not in m and "waits_avg_latency_ms" not in m


def test_memtier_json_and_text_name_metrics_alike():
    table = parse("memtier_text", "memtier_2x_get_only.txt")
    document = parse("memtier_json", "memtier_2x_get_only.json")
    shared = set(table) & set(document)
    assert (
        set(MGLRU_COLUMNS) | {"gets_ops_per_sec", "gets_p999_latency_ms", "hits_per_sec"} <= shared
    )
    for name in shared:  # the JSON rounds latencies to 3 decimals (and hits differ in the fixtures)
        if not name.endswith("hits_per_sec") and not name.endswith("misses_per_sec"):
            assert document[name] == pytest.approx(table[name], abs=5e-4), name


def test_memtier_json_run_count_reads_the_aggregated_average():
    m = parse("memtier_json", "memtier_2x_run_count2.json")
    assert m["ops_per_sec"] == 48550.71  # BEST is 48600.55, WORST 48500.87
    assert m["p99_latency_ms"] == 2.847


def test_memtier_json_written_to_a_pipe_keeps_trailing_commas():
    """memtier seeks back over the last comma; on a pipe it cannot, so the JSON is invalid."""
    text = fixture("memtier_2x_to_pipe.json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert get_parser("memtier_json").parse(text) == parse(
        "memtier_json", "memtier_2x_get_only.json"
    )


def test_memtier_json_old_version_latency_only():
    m = parse("memtier_json", "memtier_1.3.0_mixed.json")
    assert m["avg_latency_ms"] == 1.61 and m["ops_per_sec"] == 21795.16
    assert m["gets_misses_per_sec"] == 112.77
    assert "waits_avg_latency_ms" not in m and "p99_latency_ms" not in m


def test_memtier_json_after_other_text_and_with_c_infinities():
    text = fixture("memtier_2x_get_only.json").replace(
        '"Min Latency": 0.031', '"Min Latency": inf', 1
    )
    m = get_parser("memtier_json").parse("Json file out.json created...\n" + text)
    assert m["ops_per_sec"] == 48550.71
    assert "gets_min_latency_ms" not in m  # the infinite value is no measurement


def test_memtier_json_errors():
    parser = get_parser("memtier_json")
    with pytest.raises(ParseError, match="no JSON object"):
        parser.parse('{"configuration": {"port": 11211}}')
    with pytest.raises(ParseError, match="no 'Totals' object"):
        parser.parse('{"ALL STATS": {"Gets": {"Ops/sec": 1.0}}}')
    with pytest.raises(ParseError, match="expected a number"):
        parser.parse('{"ALL STATS": {"Totals": {"Ops/sec": "fast"}}}')
    with pytest.raises(ParseError, match="WORST RUN RESULTS"):
        parser.parse('{"WORST RUN RESULTS": {"Totals": {"Ops/sec": 1.0}}}')


# --- memtier (detects) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "memtier_2x_get_only.txt",
        "memtier_1.3.0_mixed.txt",
        "memtier_2x_run_count3.txt",
        "memtier_2x_stderr_merged.txt",
    ],
)
def test_memtier_detects_the_table(name):
    assert parse("memtier", name) == parse("memtier_text", name)


@pytest.mark.parametrize(
    "name",
    [
        "memtier_2x_get_only.json",
        "memtier_2x_run_count2.json",
        "memtier_2x_to_pipe.json",
        "memtier_1.3.0_mixed.json",
    ],
)
def test_memtier_detects_json(name):
    assert parse("memtier", name) == parse("memtier_json", name)


def test_memtier_neither():
    with pytest.raises(ParseError) as e:
        get_parser("memtier").parse("Benchmark 1: true\n  Time (mean ± σ): 0.3 ms\n")
    assert "results table" in e.value.message and "JSON" in e.value.message


# --- hyperfine ------------------------------------------------------------------------


def test_hyperfine_one_command_matches_its_json():
    raw = json.loads(fixture("hyperfine_one.json"))["results"][0]
    m = parse("hyperfine", "hyperfine_one.json")
    for key in ("mean", "stddev", "median", "min", "max", "user", "system"):
        assert m[f"{key}_s"] == raw[key]
    assert m["runs"] == 10 == len(raw["times"])
    assert m["failed_runs"] == 0
    assert m["min_s"] <= m["median_s"] <= m["max_s"]


def test_hyperfine_single_run_has_no_stddev():
    m = parse("hyperfine", "hyperfine_single_run.json")
    assert "stddev_s" not in m and m["runs"] == 1 and m["mean_s"] == m["min_s"]


def test_hyperfine_named_commands_are_prefixed():
    m = parse("hyperfine", "hyperfine_named.json")
    assert {k.rsplit("_mean_s", 1)[0] for k in m if k.endswith("_mean_s")} == {"fast", "slow_one"}
    assert m["slow_one_mean_s"] > m["fast_mean_s"]  # sleep 0.02 vs sleep 0.005
    assert m["fast_runs"] == 5


def test_hyperfine_parameter_scan_prefixes_by_parameter():
    m = parse("hyperfine", "hyperfine_scan.json")
    assert {"ms_1_mean_s", "ms_2_mean_s", "ms_3_mean_s"} <= set(m)
    assert m["ms_1_mean_s"] < m["ms_3_mean_s"]


def test_hyperfine_colliding_names_use_positions():
    doc = {
        "results": [
            {"command": "true", "mean": 0.1, "times": [0.1]},
            {"command": "true", "mean": 0.2, "times": [0.2]},
        ]
    }
    m = get_parser("hyperfine").parse(json.dumps(doc))
    assert m["cmd1_mean_s"] == 0.1 and m["cmd2_mean_s"] == 0.2


def test_hyperfine_failures_are_counted():
    assert parse("hyperfine", "hyperfine_failing.json")["failed_runs"] == 3


def test_hyperfine_after_human_output():
    m = parse("hyperfine", "hyperfine_stdout_mixed.txt")
    assert m["runs"] == 5 and 0.001 < m["mean_s"] < 1.0


def test_hyperfine_real_run_on_stdout():
    out = subprocess.run(
        ["hyperfine", "-N", "--runs", "3", "--export-json", "/dev/stdout", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    m = get_parser("hyperfine").parse(out)
    assert m["runs"] == 3
    assert 0 < m["min_s"] <= m["mean_s"] <= m["max_s"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "no JSON object with a 'results' list"),
        ('{"results": []}', "$.results: no commands"),
        ('{"results": [{"command": "x"}]}', "$.results[0]: no 'mean' time"),
        (
            '{"results": [{"command": "x", "mean": "slow"}]}',
            "$.results[0].mean: expected a number of seconds",
        ),
        ('{"results": [{"command": "x", "mean": 1, "times": [1, "x"]}]}', "$.results[0].times[1]"),
        (
            '{"results": [{"command": "x", "mean": 1, "times": [1], "exit_codes": [0, 0]}]}',
            "$.results[0].exit_codes: 2 values for 1 runs",
        ),
    ],
)
def test_hyperfine_errors(text, needle):
    with pytest.raises(ParseError) as e:
        get_parser("hyperfine").parse(text)
    assert needle in e.value.message
