"""`perflab import --format`: result files of Go's testing package, Google Benchmark,
pytest-benchmark, hyperfine and criterion, made by those tools on this machine
(tests/data/importers/README.md says how), imported through the real CLI into a new store
and read back: run counts, metric values and units, parameters. Bad input is one line
naming the file and where in it, and writes nothing."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import REPO, perflab
from perflab.store import Database

DATA = REPO / "tests" / "data" / "importers"
GO_OLD, GO_NEW = DATA / "gobench" / "old.txt", DATA / "gobench" / "new.txt"


@dataclass
class Run:
    variant: str
    cell: dict[str, str]
    repetition: int
    status: str
    values: dict[str, float]


@dataclass
class Imported:
    eid: int
    name: str
    baseline: str
    settings: dict
    metrics: dict[str, tuple[str, str]]  # name → (unit, better)
    runs: list[Run]

    def where(self, variant: str, **cell: str) -> list[Run]:
        """The runs of ``variant`` whose cell has these labels, in repetition order."""
        out = [
            r
            for r in self.runs
            if r.variant == variant and all(r.cell.get(k) == v for k, v in cell.items())
        ]
        return sorted(out, key=lambda r: r.repetition)

    def cells(self) -> list[dict[str, str]]:
        return [dict(c["labels"]) for c in self.settings["cells"]]


def import_files(tmp_path: Path, fmt: str, *args: str | Path) -> Imported:
    db = tmp_path / "p.db"
    r = perflab("import", "--format", fmt, *map(str, args), "--store", str(db))
    assert r.code == 0, r.err
    eid = int(r.out.split()[-1])
    with Database(db, write=False) as store:
        exp = store.experiment(eid)
        values: dict[int, dict[str, float]] = {}
        for run_id, name, value in store.metrics(eid):
            values.setdefault(run_id, {})[name] = value
        runs = [
            Run(x.variant, x.cell, x.repetition, x.status, values.get(x.id, {}))
            for x in store.runs(eid)
        ]
        metrics = {m.name: (m.unit, m.better) for m in store.metric_defs(eid)}
    assert f"imported {len(runs)} runs" in r.err
    return Imported(eid, exp.name, exp.baseline, exp.settings, metrics, runs)


def one_error(tmp_path: Path, fmt: str, *args: str | Path) -> str:
    """The single line of a failed import (exit 2, no traceback), with no store written."""
    db = tmp_path / "p.db"
    r = perflab("import", "--format", fmt, *map(str, args), "--store", str(db))
    assert r.code == 2, r
    assert "Traceback" not in r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab: error: "), r.err
    assert not db.exists()
    return lines[0].removeprefix("perflab: error: ")


# ----------------------------------------------------------------------------- Go


def test_gobench_two_files_are_two_variants(tmp_path):
    got = import_files(tmp_path, "gobench", GO_OLD, GO_NEW)
    # 6 benchmarks (Sum, 4 Lookup sub-benchmarks, Alloc) × GOMAXPROCS 1, 2 × -count 5, twice
    assert len(got.runs) == 120 and {r.status for r in got.runs} == {"ok"}
    assert got.name == "old" and got.baseline == "old"
    assert got.settings["variants"] == [
        {"name": "old", "description": ""},
        {"name": "new", "description": ""},
    ]
    assert got.settings["params"] == ["benchmark", "size", "algo", "gomaxprocs"]
    assert got.metrics == {
        "ns/op": ("ns", "lower"),
        "B/op": ("B", "lower"),
        "allocs/op": ("", "lower"),
        "MB/s": ("MB/s", "higher"),
    }
    assert len(got.cells()) == 12
    # BenchmarkSum (no suffix: GOMAXPROCS 1) of old.txt, lines 6-10
    sum1 = got.where("old", benchmark="Sum", gomaxprocs="1")
    assert [r.values["ns/op"] for r in sum1] == [528.0, 403.0, 389.3, 385.7, 695.5]
    assert sum1[0].cell == {"benchmark": "Sum", "size": "", "algo": "", "gomaxprocs": "1"}
    # BenchmarkLookup/size=10000/algo=map-2, old.txt:51
    lookup = got.where("old", benchmark="Lookup", size="10000", algo="map", gomaxprocs="2")
    assert len(lookup) == 5 and lookup[0].values == {
        "ns/op": 10.70,
        "B/op": 0.0,
        "allocs/op": 0.0,
    }
    # BenchmarkAlloc-2, new.txt:61: ns/op, MB/s (b.SetBytes), B/op, allocs/op
    alloc = got.where("new", benchmark="Alloc", gomaxprocs="2")[0]
    assert alloc.values == {"ns/op": 12.52, "MB/s": 5110.72, "B/op": 64.0, "allocs/op": 1.0}
    # the configuration the same throughout a file is its context, not a parameter
    files = got.settings["import"]["files"]
    assert [f["config"]["commit"] for f in files] == ["4faaf4c", "a038471"]
    assert files[0]["config"]["goos"] == "linux" and files[0]["variant"] == "old"
    assert got.settings["import"]["format"] == "gobench"


def test_compare_an_imported_gobench_experiment(tmp_path):
    got = import_files(tmp_path, "gobench", GO_OLD, GO_NEW)
    db = str(tmp_path / "p.db")
    r = perflab("compare", str(got.eid), "--store", db, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    pairs = {(c["cell"], c["metric"]) for c in doc["comparisons"] if c["variant"] == "new"}
    assert ("benchmark=Sum,size=,algo=,gomaxprocs=2", "ns/op") in pairs
    assert len({cell for cell, _ in pairs}) == 12
    summary = next(
        s
        for s in doc["summaries"]
        if s["cell"] == "benchmark=Sum,size=,algo=,gomaxprocs=1"
        and s["variant"] == "old"
        and s["metric"] == "ns/op"
    )
    assert summary["n"] == 5 and summary["median"] == 403.0
    assert math.isclose(summary["mean"], 480.3)
    text = perflab("compare", str(got.eid), "--store", db)
    assert text.code == 0, text.err
    assert "new vs old" in " ".join(text.out.split())


def test_one_ci_file_is_one_experiment_and_a_point_of_a_history(tmp_path):
    """A nightly CI job's one file is a measurement without a comparison: imported as one
    variant, its summaries shown, a point of `perflab history`, and compared with another
    night's by `perflab compare A B` — no invented second variant."""
    db = tmp_path / "p.db"
    for version, path in (("v1", GO_OLD), ("v2", GO_NEW)):
        r = perflab(
            "import", "--format", "gobench", str(path), "--name", "nightly",
            "--version", version, "--store", str(db),
        )  # fmt: skip
        assert r.code == 0, r.err
        alone = perflab("compare", r.out.strip(), "--store", str(db))
        assert alone.code == 0, alone.err
        assert "one variant (" in alone.out and "nothing to compare inside" in alone.out
        assert "ns/op (ns) — lower is better" in alone.out  # its summaries
        assert "TLDR" not in alone.out
    shown = perflab("compare", "1", "--store", str(db), "--json")
    assert shown.code == 0, shown.err
    doc = json.loads(shown.out)
    assert doc["comparisons"] == [] and {s["variant"] for s in doc["summaries"]} == {"old"}
    both = perflab("compare", "1", "2", "--store", str(db))
    assert both.code == 0, both.err
    assert "TLDR — #2 vs #1" in both.out or "TLDR — v2 vs v1" in both.out, both.out
    history = perflab("history", "nightly", "--store", str(db), "--metric", "ns/op")
    assert history.code == 0, history.err
    assert "v1" in history.out and "v2" in history.out


def test_gobench_variant_from_a_configuration_key(tmp_path):
    """Both files in one: the `commit:` line names the variant."""
    both = tmp_path / "both.txt"
    both.write_text(GO_OLD.read_text() + GO_NEW.read_text())
    got = import_files(tmp_path, "gobench", both, "--variant-from", "commit")
    assert [v["name"] for v in got.settings["variants"]] == ["4faaf4c", "a038471"]
    assert got.settings["params"] == ["benchmark", "size", "algo", "gomaxprocs"]
    assert len(got.where("a038471", benchmark="Sum")) == 10


def test_gobench_unit_lines_say_which_direction_is_better(tmp_path):
    """A ``Unit`` line (benchfmt's unit metadata) overrides the guess from the unit."""
    path = tmp_path / "units.txt"
    path.write_text("Unit allocs/op better=higher assume=exact\n" + GO_NEW.read_text())
    got = import_files(tmp_path, "gobench", GO_OLD, path)
    assert got.metrics["allocs/op"] == ("", "higher") and got.metrics["ns/op"] == ("ns", "lower")


def test_gobench_custom_time_units_are_times(tmp_path):
    """A custom ``b.ReportMetric`` unit ending in a time unit (``build-real-ns``, as Go's
    own compilebench reports) is a time, in that unit, as benchstat scales it; ``sec/op``
    is seconds."""
    lines = ["BenchmarkBuild-8  1  {} ns/op  {} build-real-ns  {} user-sec/op  12 objects"]
    for name, k in (("a.txt", 1.0), ("b.txt", 1.1)):
        (tmp_path / name).write_text(
            "\n".join(lines[0].format(100 * k * (1 + i / 100), 2e9 * k, 1.5 * k) for i in range(5))
        )
    got = import_files(tmp_path, "gobench", tmp_path / "a.txt", tmp_path / "b.txt")
    assert got.metrics["build-real-ns"] == ("ns", "lower")
    assert got.metrics["user-sec/op"] == ("s", "lower")
    assert got.metrics["objects"] == ("objects", "lower")


def test_gobench_exact_units_are_said_when_their_values_vary(tmp_path):
    exact = "Unit allocs/op assume=exact\n"
    steady = tmp_path / "steady.txt"
    steady.write_text(exact + GO_OLD.read_text())  # allocs/op the same in every run
    noisy = tmp_path / "noisy.txt"
    noisy.write_text(
        exact
        + "BenchmarkSum-8  100  10 ns/op  3 allocs/op\nBenchmarkSum-8  100  11 ns/op  4 allocs/op\n"
    )
    db = tmp_path / "p.db"
    r = perflab("import", "--format", "gobench", str(steady), str(GO_NEW), "--store", str(db))
    assert r.code == 0 and "assume=exact" not in r.err, r.err
    r = perflab("import", "--format", "gobench", str(noisy), str(GO_NEW), "--store", str(db))
    assert r.code == 0, r.err
    note = " ".join(r.err.split())
    assert f"perflab: note: {noisy}: allocs/op is declared exact (Unit … assume=exact)" in note
    assert "but its values vary between runs of one benchmark" in note
    bad = tmp_path / "bad" / "bad.txt"
    bad.parent.mkdir()
    bad.write_text("Unit ns/op assume=sometimes\n" + GO_NEW.read_text())
    assert one_error(bad.parent, "gobench", bad, GO_OLD) == (
        f"{bad}:1: assume='sometimes': expected exact or nothing"
    )


def test_files_measured_on_unlike_setups_are_warned_about(tmp_path):
    """Two nights on different CPUs compare more than the code: said at import and by
    every compare; a differing ``commit:`` (what a CI run prints to name its version) is
    what should differ, and is not."""
    for name, cpu, commit, ns in (("a.txt", "Xeon", "abc", 120), ("b.txt", "EPYC", "def", 110)):
        (tmp_path / name).write_text(
            f"goos: linux\ncpu: {cpu}\ncommit: {commit}\n"
            + "".join(f"BenchmarkSum-8  1000  {ns + i} ns/op\n" for i in range(5))
        )
    db = tmp_path / "p.db"
    r = perflab("import", "--format", "gobench", str(tmp_path / "a.txt"),
                str(tmp_path / "b.txt"), "--store", str(db))  # fmt: skip
    assert r.code == 0, r.err
    said = "the files were not measured alike (cpu: a.txt 'Xeon', b.txt 'EPYC')"
    assert f"perflab: warning: {said}" in r.err and "commit" not in r.err, r.err
    shown = perflab("compare", "1", "--store", str(db))
    assert said in " ".join(shown.out.split()), shown.out
    (tmp_path / "c.txt").write_text((tmp_path / "b.txt").read_text().replace("EPYC", "Xeon"))
    again = perflab("import", "--format", "gobench", str(tmp_path / "a.txt"),
                    str(tmp_path / "c.txt"), "--store", str(db))  # fmt: skip
    assert again.code == 0 and "warning" not in again.err, again.err


# ----------------------------------------------------------------------------- Google Benchmark


def test_a_rate_is_better_higher_in_every_format(tmp_path):
    """One rule for a metric's direction when the file does not state it: a user counter
    named as a rate (``GB/s``, as kokkos-benchmark-results writes its bandwidth) is better
    higher, as Go's ``MB/s`` and pytest-benchmark's ``ops`` are."""
    from perflab.importers.model import better_of

    doc = json.loads((DATA / "gbench" / "bench.json").read_text())
    for k, entry in enumerate(doc["benchmarks"]):
        entry["GB/s"] = 10.0 + k
        entry["bytes"] = 4096
    path = tmp_path / "kokkos.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "gbench", path, "--variant-from", "benchmark")
    assert got.metrics["GB/s"] == ("", "higher") and got.metrics["bytes"] == ("", "lower")
    assert [better_of(u) for u in ("MB/s", "ns/op", "B/op", "ops", "items_per_second")] == [
        "higher", "lower", "lower", "higher", "higher",
    ]  # fmt: skip


def test_gbench_aggregates_only_fall_back_to_the_aggregates_and_say_so(tmp_path):
    """--benchmark_report_aggregates_only=true (as google/benchmark's own test4 input):
    one run per benchmark carrying its mean, median and stddev, and a note saying that no
    interval can come of it (it was refused)."""
    doc = json.loads((DATA / "gbench" / "bench.json").read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b.get("run_type") == "aggregate"]
    assert doc["benchmarks"]
    path = tmp_path / "aggregates.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "p.db"
    r = perflab("import", "--format", "gbench", str(path), "--variant-from", "benchmark",
                "--store", str(db))  # fmt: skip
    assert r.code == 0, r.err
    assert "only Google Benchmark's aggregates are in this file" in r.err, r.err
    got = import_files(tmp_path / "again", "gbench", path, "--variant-from", "benchmark")
    means = [m for m in got.metrics if m.endswith("_mean")]
    assert {"real_time_mean", "real_time_median", "real_time_stddev"} <= set(got.metrics)
    assert means and all(len(got.where(v["name"])) >= 1 for v in got.settings["variants"])
    mean = next(b for b in doc["benchmarks"] if b["aggregate_name"] == "mean")
    run = got.where(mean["run_name"].split("/")[0])[0]
    assert run.values["real_time_mean"] == pytest.approx(mean["real_time"])


def test_gbench_run_options_are_settings_not_arguments(tmp_path):
    """``/iterations:5/manual_time`` at the end of a name are options Google Benchmark
    appends: not positional arguments (``arg2: manual_time``), and parameters only where
    they vary (here ``timing``: manual for one benchmark, real for the other)."""
    doc = json.loads((DATA / "gbench" / "bench.json").read_text())
    for entry in doc["benchmarks"]:
        suffix = "/iterations:5/manual_time" if "Vector" in entry["name"] else "/real_time"
        for key in ("name", "run_name"):
            if key in entry:
                entry[key] += suffix
    path = tmp_path / "options.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "gbench", path, "--variant-from", "benchmark")
    params = got.settings["params"]
    assert "timing" in params and not any(p.startswith("arg2") for p in params), params
    assert {r.cell.get("timing") for r in got.runs} == {"manual_time", "real_time"}


def test_a_metric_one_side_never_recorded_is_said_so(tmp_path):
    """new.txt without -benchmem: its runs all succeeded, they have no B/op; the n/a
    footnote says the metric is not in its runs, not that no run succeeded."""
    new = tmp_path / "new.txt"
    lines = (DATA / "gobench" / "new.txt").read_text().splitlines()
    new.write_text("\n".join(line.split("\t       0 B/op")[0] for line in lines) + "\n")
    db = tmp_path / "p.db"
    r = perflab("import", "--format", "gobench", str(DATA / "gobench" / "old.txt"), str(new),
                "--store", str(db))  # fmt: skip
    assert r.code == 0, r.err
    out = perflab("compare", "1", "--store", str(db), "--metric", "B/op").out
    assert "B/op is not in the runs of new" in out, out
    assert "no successful run on a side" not in out


def test_time_units_convert_exactly():
    from perflab.importers.model import convert_time

    assert convert_time(1.0, "s", "ns") == 1e9  # was 999999999.9999999
    assert convert_time(3.0, "ms", "µs") == 3000.0 and convert_time(2.5, "us", "ns") == 2500.0
    assert convert_time(1500.0, "ns", "µs") == 1.5


def test_gbench_repetitions_without_aggregates(tmp_path):
    got = import_files(
        tmp_path,
        "gbench",
        DATA / "gbench" / "bench.json",
        "--variant-from",
        "benchmark",
        "--baseline",
        "BM_SetFind",
    )
    # 5 benchmarks × 3 repetitions; the 20 aggregates (mean, median, stddev, cv) skipped
    assert len(got.runs) == 15
    assert got.baseline == "BM_SetFind"
    assert [v["name"] for v in got.settings["variants"]] == [
        "BM_VectorFind",
        "BM_SetFind",
        "BM_Memcpy",
    ]
    assert got.settings["params"] == ["size", "arg1"]  # threads: 1 throughout, context
    assert got.metrics == {
        "real_time": ("ns", "lower"),
        "cpu_time": ("ns", "lower"),
        "items_per_second": ("items/s", "higher"),
        "bytes_per_second": ("B/s", "higher"),
        "chunks": ("", "lower"),
    }
    first = got.where("BM_VectorFind", size="100")
    assert len(first) == 3
    assert first[0].values["real_time"] == pytest.approx(3.246679586010642)
    assert first[0].values["items_per_second"] == pytest.approx(308501086.7077594)
    # BM_Memcpy's time_unit is us: converted to the metric's ns
    memcpy = got.where("BM_Memcpy", arg1="4096")[0]
    assert memcpy.values["real_time"] == pytest.approx(46.791273447867106)
    assert memcpy.values["bytes_per_second"] == pytest.approx(87609819594.19725)
    assert memcpy.values["chunks"] == 1.0
    context = got.settings["import"]["files"][0]["context"]
    assert context["num_cpus"] == 2 and context["library_build_type"] == "debug"


# ----------------------------------------------------------------------------- pytest-benchmark


def test_pytest_benchmark_rounds_are_runs(tmp_path):
    got = import_files(
        tmp_path,
        "pytest-benchmark",
        DATA / "pytest-benchmark" / "rounds.json",
        "--variant-from",
        "benchmark",
    )
    assert len(got.runs) == 4 * 8 + 7  # every round of stats.data
    assert got.metrics == {"time": ("s", "lower")}
    assert got.settings["params"] == ["size"]
    assert got.baseline == "test_bisect"
    bisect = got.where("test_bisect", size="100")
    assert len(bisect) == 8
    assert bisect[0].values["time"] == pytest.approx(8.312999852932989e-08)
    assert len(got.where("test_sorted", size="")) == 7
    context = got.settings["import"]["files"][0]["context"]
    assert context["version"] == "5.3.1" and "flags" not in context["machine_info"]["cpu"]


def test_pytest_benchmark_statistics_only(tmp_path):
    got = import_files(
        tmp_path,
        "pytest-benchmark",
        DATA / "pytest-benchmark" / "stats.json",
        "--variant-from",
        "benchmark",
    )
    assert len(got.runs) == 5  # one per benchmark: no rounds in a file saved without data
    assert list(got.metrics) == ["mean", "median", "min", "max", "stddev", "iqr", "ops"]
    assert got.metrics["ops"] == ("/s", "higher") and got.metrics["mean"] == ("s", "lower")
    run = got.where("test_in_set", size="10000")[0]
    assert run.values["mean"] == pytest.approx(4.059857721911361e-08)
    assert run.values["ops"] == pytest.approx(24631405.051534783)


# ----------------------------------------------------------------------------- hyperfine


def test_hyperfine_parameter_sweep(tmp_path):
    got = import_files(
        tmp_path,
        "hyperfine",
        DATA / "hyperfine" / "sweep-1.json",
        DATA / "hyperfine" / "sweep-2.json",
    )
    assert len(got.runs) == 2 * 3 * 5
    assert got.metrics == {"time": ("s", "lower")}
    assert got.settings["params"] == ["command", "n"]
    runs = got.where("sweep-2", n="1")
    assert runs[0].cell == {"command": "sleep 0.01", "n": "1"}
    assert [r.values["time"] for r in runs[:2]] == [0.012135509380000001, 0.009585079380000002]


def test_hyperfine_commands_as_variants(tmp_path):
    got = import_files(
        tmp_path, "hyperfine", DATA / "hyperfine" / "commands.json", "--variant-from", "command"
    )
    assert [v["name"] for v in got.settings["variants"]] == ["true", "sleep 0.005"]
    assert got.settings["params"] == [] and got.cells() == [{}]
    assert got.where("sleep 0.005")[0].values["time"] == 0.00585334


def test_hyperfine_failed_runs(tmp_path):
    doc = json.loads((DATA / "hyperfine" / "commands.json").read_text())
    doc["results"][1]["exit_codes"][2] = 1  # as kept with --ignore-failure
    path = tmp_path / "failing.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "hyperfine", path, "--variant-from", "command")
    assert [r.status for r in got.where("sleep 0.005")] == ["ok", "ok", "failed", "ok", "ok"]
    assert got.where("sleep 0.005")[2].values == {}


def test_hyperfine_a_command_whose_runs_all_failed(tmp_path):
    """A command kept with --ignore-failure whose every run failed (as in hyperfine-py's
    ignored_failure.json) comes in as failed runs with their exit status, beside the
    commands that ran; `show` says the status of each."""
    doc = json.loads((DATA / "hyperfine" / "commands.json").read_text())
    runs = len(doc["results"][1]["times"])
    doc["results"][1]["exit_codes"] = [2] * (runs - 1) + [None]
    path = tmp_path / "failing.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "hyperfine", path, "--variant-from", "command")
    assert [r.status for r in got.where("sleep 0.005")] == ["failed"] * runs
    shown = perflab("show", str(got.eid), "--store", str(tmp_path / "p.db")).out
    assert "failed: exited with status 2" in shown and "failed: killed by a signal" in shown
    assert "failed: None" not in shown
    only = tmp_path / "only.json"  # nothing measured at all: said, not stored
    only.write_text(json.dumps({"results": [doc["results"][1]]}))
    (tmp_path / "alone").mkdir()
    assert "every run in this file failed" in one_error(tmp_path / "alone", "hyperfine", only)


def test_hyperfine_a_parameter_scan_by_its_parameter(tmp_path):
    """--parameter-scan delay 0.1 0.3: each command names its value (sleep 0.1, ...); with
    --variant-from delay the command only restates the variant and is no parameter (it put
    every variant in a cell of its own: every cell n/a)."""
    doc = json.loads((DATA / "hyperfine" / "commands.json").read_text())
    base = doc["results"][1]
    doc["results"] = [
        {**base, "command": f"sleep {d}", "parameters": {"delay": d}} for d in ("0.1", "0.3")
    ]
    path = tmp_path / "scan.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "hyperfine", path, "--variant-from", "delay")
    assert [v["name"] for v in got.settings["variants"]] == ["0.1", "0.3"]
    assert got.settings["params"] == [] and got.cells() == [{}]
    out = perflab("compare", str(got.eid), "--store", str(tmp_path / "p.db")).out
    assert "n/a" not in out, out


def test_hyperfine_a_long_command_is_kept_whole(tmp_path):
    """A command line of 300+ characters (a benchmark of a long pipeline) is its label,
    whole in the record."""
    doc = json.loads((DATA / "hyperfine" / "commands.json").read_text())
    long = "sh -c '" + " | ".join(f"tr a-z A-Z <<< step{k}" for k in range(20)) + "'"
    assert len(long) > 300
    doc["results"][1]["command"] = long
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    got = import_files(tmp_path, "hyperfine", path, "--variant-from", "command")
    assert [v["name"] for v in got.settings["variants"]] == ["true", long]


# ----------------------------------------------------------------------------- criterion


def test_criterion_raw_samples(tmp_path):
    before, after = DATA / "criterion" / "before", DATA / "criterion" / "after"
    got = import_files(tmp_path, "criterion", before, after)
    assert len(got.runs) == 2 * 5 * 10  # 5 benchmarks × sample_size(10), twice
    assert got.settings["params"] == ["benchmark", "function", "parameter"]
    assert got.metrics == {"time": ("ns", "lower"), "elements_per_sec": ("elem/s", "higher")}
    fib = got.where("before", benchmark="fib 10")
    assert fib[0].cell == {"benchmark": "fib 10", "function": "", "parameter": ""}
    assert fib[0].values == {"time": pytest.approx(8160291.0 / 77198.0)}
    binary = got.where("after", benchmark="lookup", function="binary", parameter="100")[0]
    assert binary.values["time"] == pytest.approx(3831004.0 / 863703.0)
    # Throughput::Elements(1): one element per iteration
    assert binary.values["elements_per_sec"] == pytest.approx(863703.0 / 3831004.0 * 1e9)


def test_two_folders_of_one_name_are_described_by_their_paths(tmp_path):
    """Two runs' target/criterion folders (both named criterion): the description says
    which is which, not "imported from criterion, criterion"."""
    a, b = tmp_path / "main" / "criterion", tmp_path / "topic" / "criterion"
    shutil.copytree(DATA / "criterion" / "before", a)
    shutil.copytree(DATA / "criterion" / "after", b)
    db = tmp_path / "p.db"
    assert perflab("import", "--format", "criterion", str(a), str(b), "--store", str(db)).code == 0
    with Database(db, write=False) as store:
        said = store.experiment(1).description
    assert str(a) in said and str(b) in said and "criterion, criterion" not in said, said


def test_criterion_functions_as_variants_and_estimates(tmp_path):
    group = tmp_path / "lookup"
    shutil.copytree(DATA / "criterion" / "before" / "lookup", group)
    got = import_files(tmp_path, "criterion", group, "--variant-from", "function")
    assert [v["name"] for v in got.settings["variants"]] == ["binary", "linear"]
    assert got.settings["params"] == ["benchmark", "parameter"]
    assert len(got.where("linear", parameter="1000")) == 10
    # without sample.json: criterion's estimates, one run
    for bench in group.glob("*/*/new"):
        (bench / "sample.json").unlink()
    got = import_files(tmp_path / "x", "criterion", group, "--variant-from", "function")
    assert len(got.runs) == 4
    assert list(got.metrics) == ["mean", "median", "slope", "std_dev", "median_abs_dev"]
    estimates = json.loads((group / "binary" / "100" / "new" / "estimates.json").read_text())
    run = got.where("binary", parameter="100")[0]
    assert run.values["mean"] == estimates["mean"]["point_estimate"]


# ----------------------------------------------------------------------------- bad input


def test_truncated_json_names_the_line(tmp_path):
    text = (DATA / "gbench" / "bench.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    line = one_error(tmp_path, "gbench", path)
    assert line.startswith(f"{path}:") and "not valid JSON" in line
    lineno = int(line.split(":")[1])
    assert lineno == text[: len(text) // 2].count("\n") + 1


def test_wrong_json_value_names_its_path(tmp_path):
    doc = json.loads((DATA / "hyperfine" / "sweep-1.json").read_text())
    doc["results"][1]["times"][3] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert one_error(tmp_path, "hyperfine", path, path) == (
        f"{path}: $.results[1].times[3]: expected a number, found 'fast'"
    )


@pytest.mark.parametrize(
    "line, expected",
    [
        ("BenchmarkX-8  100  123 ns/op  45 12", "'12' is not a unit (after value 45)"),
        ("BenchmarkX-8  100  123 ns/op  45", "value 45 has no unit"),
        ("BenchmarkX-8  100  fast ns/op", "'fast' is not a number (a value before its unit)"),
        ("BenchmarkX-8  many  123 ns/op", "iteration count 'many' is not a whole number"),
        ("BenchmarkX-8  100", "no measurements after the iteration count"),
        ("BenchmarkX-8  100  1 ns/op 2 ns/op", "unit 'ns/op' appears twice"),
        ("Unit ns/op better=faster", "better='faster': expected higher or lower"),
    ],
)
def test_bad_benchfmt_line(tmp_path, line, expected):
    lines = GO_OLD.read_text().splitlines()
    lines.insert(9, line)  # becomes line 10
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    assert one_error(tmp_path, "gobench", path, GO_NEW) == f"{path}:10: {expected}"


def test_missing_criterion_file(tmp_path):
    tree = tmp_path / "criterion"
    shutil.copytree(DATA / "criterion" / "before", tree)
    missing = tree / "lookup" / "linear" / "100" / "new" / "benchmark.json"
    missing.unlink()
    line = one_error(tmp_path, "criterion", tree, DATA / "criterion" / "after")
    assert line == f"{missing}: missing (criterion writes it beside sample.json)"
    for f in ("sample.json", "estimates.json"):
        (missing.parent / f).unlink()
    (tree / "fib 10" / "new" / "sample.json").unlink()
    (tree / "fib 10" / "new" / "estimates.json").unlink()
    line = one_error(tmp_path, "criterion", tree, DATA / "criterion" / "after")
    fib = tree / "fib 10" / "new"
    assert line == f"{fib}: neither sample.json nor estimates.json (is the run complete?)"


@pytest.mark.parametrize(
    "fmt, args, expected",
    [
        ("gobench", [GO_OLD, GO_OLD], f"{GO_OLD}: a file given twice"),
        ("gobench", [GO_OLD, GO_NEW, "--baseline", "x"], "--baseline 'x' is not a variant"),
        ("gobench", [GO_OLD, "--variant-from", "nope"], "--variant-from 'nope': no such"),
        ("gobench", [GO_OLD, "--variant-from", "algo"], f"{GO_OLD}:6: no 'algo' here"),
        ("gobench", [DATA / "README.md", GO_OLD], "no benchmark results"),
        ("gbench", [DATA / "nope.json"], "result file not found"),
        ("gbench", [GO_OLD], f"{GO_OLD}:1:1: not valid JSON"),
        ("criterion", [GO_OLD], "criterion results are a folder"),
        ("criterion", [DATA / "gobench"], "no criterion benchmarks here"),
        ("hyperfine", [DATA / "gbench" / "bench.json"], "$.results: no list of benchmarks"),
        ("gobench", [GO_OLD, GO_NEW, "--metric", "x:lower"], "--metric is a CSV option"),
        ("gobench", [GO_OLD, GO_NEW, "--variant", "v"], "--variant is a CSV option"),
    ],
)
def test_bad_input_is_one_line(tmp_path, fmt, args, expected):
    assert expected in one_error(tmp_path, fmt, *args)


def test_csv_options_keep_their_rules(tmp_path):
    db = tmp_path / "p.db"
    for argv, expected in (
        ([], "the following arguments are required: --variant, --metric, --baseline"),
        (["--variant", "v", "--metric", "t:lower", "--baseline", "a", "--variant-from", "k"],
         "--variant-from is for --format imports"),
    ):  # fmt: skip
        r = perflab("import", str(GO_OLD), "--store", str(db), *argv)
        assert r.code == 2 and expected in r.err and len(r.err.splitlines()) == 1
    r = perflab("import", str(GO_OLD), str(GO_NEW), "--store", str(db), "--variant", "v",
                "--metric", "t:lower", "--baseline", "a")  # fmt: skip
    assert r.code == 2 and "a CSV import reads one file; 2 were given" in r.err
    assert not db.exists()


def test_a_csv_label_is_held_to_the_same_limit_as_a_tools(tmp_path):
    """A CSV's variant label may be as long as a tool file's (a 300-character command line
    is kept whole); one past the importers' limit is one line naming the file and line, and
    nothing is written."""
    from perflab.importers.assemble import MAX_LABEL

    db = tmp_path / "p.db"
    long = "sh -c '" + " | ".join(f"tr a-z A-Z <<< step{k}" for k in range(20)) + "'"
    assert 300 < len(long) <= MAX_LABEL
    csv = tmp_path / "runs.csv"
    csv.write_text(f'v,t\nbase,1.0\nbase,1.1\n"{long}",2.0\n"{long}",2.1\n')
    args = ("--variant", "v", "--metric", "t:lower", "--baseline", "base")
    r = perflab("import", str(csv), "--store", str(db), *args)
    assert r.code == 0, r.err
    with Database(db) as store:
        got = store.experiment("last")
    assert long in [v["name"] for v in got.settings["variants"]]
    too_long = tmp_path / "too-long.csv"
    too_long.write_text(f"v,t\nbase,1.0\n{'x' * (MAX_LABEL + 1)},2.0\n")
    r = perflab("import", str(too_long), "--store", str(tmp_path / "q.db"), *args)
    assert r.code == 2 and len(r.err.splitlines()) == 1, r.err
    assert f"{too_long}:3: column 'v': a label of {MAX_LABEL + 1:,} characters" in r.err
    assert not (tmp_path / "q.db").exists()


def test_the_cli_lists_every_format():
    from perflab.cli.import_csv import FORMATS as CLI_FORMATS
    from perflab.importers import FORMATS

    assert list(CLI_FORMATS) == ["csv", *FORMATS]


def test_a_tools_context_that_differs_is_warned_about_by_key_words(tmp_path):
    """Google Benchmark's context: another CPU count is a setup that differs; another date,
    executable path or library version names the run, and is not warned about (keys are
    matched by their words: 'date', not a 'date' inside another word)."""
    doc = json.loads((DATA / "gbench" / "bench.json").read_text())
    paths = []
    for k, cpus in enumerate((2, 8)):
        d = json.loads(json.dumps(doc))
        d["context"].update(
            num_cpus=cpus, date=f"2026-11-2{k}", executable=f"./b{k}", library_version=f"v1.{k}"
        )
        paths.append(tmp_path / f"night{k}.json")
        paths[-1].write_text(json.dumps(d))
    db = tmp_path / "p.db"
    r = perflab("import", "--format", "gbench", *map(str, paths), "--store", str(db))
    assert r.code == 0, r.err
    said = " ".join(r.err.split())
    assert "num_cpus: night0.json '2', night1.json '8'" in said, said
    for key in ("date", "executable", "library_version"):
        assert f"{key}:" not in said, said
