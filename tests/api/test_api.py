"""The Python API (`perflab.open`, `perflab.run`) against real stores: the MGLRU memcached
runs imported through the CLI, and a small experiment run for real. Every number is
checked against its source — the imported CSV, or what `perflab compare --format csv`
prints for the same options."""

from __future__ import annotations

import csv
import io
import json
import math
import signal
import sqlite3
import subprocess
import sys
import tempfile

import pandas as pd
import perflab
import perflab.api
import pytest
from cli_helpers import mglru_store as import_mglru
from cli_helpers import perflab as cli
from cli_helpers import write_spec
from perflab.errors import InputError, PerflabError, SpecError, StoreError
from testdata import MGLRU_RUNS, TINY, csv_rows, fingerprint, mglru_import

METRICS = ("ops_per_sec", "p99_latency_ms")


@pytest.fixture
def mglru(tmp_path):
    return import_mglru(tmp_path)


def cli_compare(db, eid, *options: str) -> dict[tuple[str, str, str], dict[str, str]]:
    """`perflab compare --format csv`'s per-cell rows by (cell, variant, metric)."""
    r = cli("compare", str(eid), "--store", str(db), "--format", "csv", *options)
    assert r.code == 0, r.err
    return {
        (row["cell"], row["variant"], row["metric"]): row
        for row in csv.DictReader(io.StringIO(r.out))
        if row["method"] != "sweep"
    }


def _num(text: str) -> float:
    return float(text) if text != "" else math.nan


def assert_matches_cli(result, expected) -> None:
    """Each row of ``result`` equals the CLI's numbers for it, to the last digit."""
    frame = result.to_frame()
    assert len(frame) == len(expected) == len(result.rows)
    for r in frame.itertuples(index=False):
        e = expected[(r.cell, r.variant, r.metric)]
        pct = r.scale != "absolute"
        assert (r.n_baseline, r.n_variant) == (int(e["n_baseline"]), int(e["n_variant"]))
        assert r.baseline_location == _num(e["baseline_mean"])
        assert r.variant_location == _num(e["variant_mean"])
        est = [r.estimate * 100, r.low * 100, r.high * 100] if pct else [r.estimate, r.low, r.high]
        cols = (
            ["change_pct", "ci_low_pct", "ci_high_pct"] if pct else ["change", "ci_low", "ci_high"]
        )
        assert est == [_num(e[c]) for c in cols]
        assert (r.p_adjusted, r.p) == (_num(e["p_value"]), _num(e["p_raw"]))
        assert (r.verdict, r.method, r.scale) == (e["verdict"], e["method"], e["scale"])
        assert r.significant == (r.low > 0 or r.high < 0)
        assert r.ram_utilization_pct == r.cell.split("=")[1]


# -- the package


def test_import_perflab_loads_nothing_heavy_until_used():
    code = (
        "import sys, json, perflab\n"
        "heavy = ('pandas', 'numpy', 'sqlite3', 'perflab.api', 'importlib.metadata')\n"
        "before = [m for m in heavy if m in sys.modules]\n"
        "callable(perflab.run), perflab.open\n"
        "after = [m for m in heavy if m in sys.modules]\n"
        "print(json.dumps([before, after]))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [[], ["perflab.api"]]  # the API's own modules, no pandas
    with pytest.raises(AttributeError):
        perflab.nothing_here  # noqa: B018


def test_perflab_run_is_the_function_whatever_was_imported_first():
    """`perflab.run` is the API's function, also after the package that executes
    experiments (`perflab.execution`) was imported: no subpackage shares its name."""
    import perflab.api
    import perflab.execution.runner

    assert perflab.execution.runner is sys.modules["perflab.execution.runner"]
    assert perflab.run is perflab.api.run and perflab.open is perflab.api.open
    assert not hasattr(perflab.run, "__path__")  # a function, not a package
    with pytest.raises(InputError):
        perflab.run()  # neither a spec nor resume=: the API's own check


# -- perflab.open: experiments and runs


def test_experiments_frame(mglru):
    db, eid = mglru
    lab = perflab.open(db)
    df = lab.experiments()
    assert list(df.columns) == [
        "id", "name", "status", "source", "started", "finished", "runs", "ok", "failed",
        "pending", "baseline", "spec_path", "description",
    ]  # fmt: skip
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["id"], row["name"], row["source"], row["baseline"]) == (
        eid,
        MGLRU_RUNS.stem,
        "import",
        "baseline",
    )
    assert (row["runs"], row["ok"], row["failed"], row["pending"]) == (40, 40, 0, 0)
    assert row["status"] == json.loads(cli("ls", "--store", str(db), "--json").out)[0]["status"]
    assert str(df["started"].dtype) == "datetime64[ns, UTC]"


def test_runs_is_tidy_and_holds_the_csv_values(mglru):
    db, eid = mglru
    source = csv_rows(MGLRU_RUNS)
    lab = perflab.open(db)
    df = lab.runs(eid)
    assert len(df) == len(source) * len(METRICS) == 80
    assert list(df.columns) == [
        "experiment", "run_id", "order", "ram_utilization_pct", "variant", "repetition",
        "block", "warmup", "metric", "value", "unit", "better", "status", "host",
    ]  # fmt: skip
    assert set(df["experiment"]) == {eid} and set(df["status"]) == {"ok"}
    assert not df["warmup"].any()
    for metric in METRICS:
        one = df[df["metric"] == metric].sort_values("order")
        assert list(one["order"]) == list(range(1, len(source) + 1))
        assert list(one["value"]) == [float(r[metric]) for r in source]
        assert list(one["variant"]) == [r["variant"] for r in source]
        assert list(one["ram_utilization_pct"]) == [r["ram_utilization_pct"] for r in source]
    better = dict(zip(df["metric"], df["better"]))
    assert better == {"ops_per_sec": "higher", "p99_latency_ms": "lower"}
    # "last" and the name name the same experiment
    pd.testing.assert_frame_equal(lab.runs("last"), df)
    pd.testing.assert_frame_equal(lab.runs(MGLRU_RUNS.stem), df)


def test_reading_changes_nothing_in_the_store(mglru, tmp_path):
    db, eid = mglru
    before = fingerprint(tmp_path)
    lab = perflab.open(db)
    lab.experiments(), lab.runs(eid), lab.experiment(eid), lab.compare(eid)
    assert fingerprint(tmp_path) == before


def test_experiment_object(mglru):
    db, eid = mglru
    lab = perflab.open(db)
    exp = lab.experiment("last")
    assert (exp.id, exp.name, exp.source, exp.baseline) == (
        eid,
        MGLRU_RUNS.stem,
        "import",
        "baseline",
    )
    assert (exp.ok, exp.failed, sum(exp.counts.values())) == (40, 0, 40)
    pd.testing.assert_frame_equal(exp.runs(), lab.runs(eid))
    pd.testing.assert_frame_equal(
        exp.compare(correction="none").to_frame(), lab.compare(eid, correction="none").to_frame()
    )
    assert exp.refresh() == exp


# -- compare


def test_compare_matches_the_cli(mglru):
    db, eid = mglru
    result = perflab.open(db).compare(eid)
    assert_matches_cli(result, cli_compare(db, eid))
    assert len(result.rows) == 2 * len(METRICS)  # 2 cells × 2 metrics × 1 candidate
    assert (result.method, result.correction, result.confidence) == ("auto", "holm", 0.95)
    assert result.correction_statement
    assert {r.verdict for r in result.rows} <= {"better", "worse", "ns", "within_noise"}
    assert result.significant == [r for r in result.rows if r.significant]
    assert repr(result).startswith(f"<perflab comparison of experiment {eid} ")


@pytest.mark.parametrize(
    "kwargs, argv",
    [
        (
            {"method": "mannwhitney", "correction": "none", "confidence": 0.99},
            ["--method", "mannwhitney", "--correction", "none", "--confidence", "0.99"],
        ),
        (
            {"interval": "fieller", "correction": "bh"},
            ["--interval", "fieller", "--correction", "bh"],
        ),
        ({"threshold": "1%", "method": "welch"}, ["--threshold", "1%", "--method", "welch"]),
        ({"threshold": 0.2}, ["--threshold", "20"]),
        (
            {"method": "bootstrap", "resamples": 500, "statistic": "median"},
            ["--method", "bootstrap", "--resamples", "500", "--statistic", "median"],
        ),
    ],
)
def test_compare_options_match_the_cli(mglru, kwargs, argv):
    db, eid = mglru
    result = perflab.open(db).compare(eid, **kwargs)
    assert_matches_cli(result, cli_compare(db, eid, *argv))
    if kwargs.get("correction") == "none":
        assert all(r.p == r.p_adjusted for r in result.rows)


def test_threshold_makes_small_changes_within_noise(mglru):
    db, eid = mglru
    lab = perflab.open(db)
    plain, strict = lab.compare(eid), lab.compare(eid, threshold="50%")
    assert [r.estimate for r in plain.rows] == [r.estimate for r in strict.rows]
    assert any(r.verdict == "better" for r in plain.rows)
    assert all(r.verdict in ("within_noise", "ns") for r in strict.rows)


def test_metric_filter(mglru):
    db, eid = mglru
    lab = perflab.open(db)
    whole = lab.compare(eid, correction="none").to_frame()
    p99 = lab.compare(eid, correction="none", metrics=["p99_latency_ms"]).to_frame()
    assert set(p99["metric"]) == {"p99_latency_ms"}
    pd.testing.assert_frame_equal(
        p99.reset_index(drop=True),
        whole[whole["metric"] == "p99_latency_ms"].reset_index(drop=True),
    )


def test_html_draws_the_tldr_the_cli_prints(mglru):
    db, eid = mglru
    found = perflab.open(db).compare(eid)
    html = perflab.api.render(found, "html")
    assert html.startswith('<div class="perflab-compare">') and html.endswith("</div>")
    assert '<table class="tldr"' in html and "<script" not in html
    for row in cli_compare(db, eid).values():
        text = row["tldr"].replace(" better", "").replace(" worse", "")
        assert text in html
    for fmt in ("markdown", "csv"):
        got = perflab.api.render(found, fmt)
        assert got == cli("compare", str(eid), "--store", str(db), "--format", fmt).out


def test_a_notebook_draws_the_answer_as_html(mglru):
    """Under IPython, `compare`'s answer is drawn with the report's HTML (IPython's own
    display formatter, as a notebook calls it)."""
    from IPython.core.interactiveshell import InteractiveShell

    db, eid = mglru
    shell = InteractiveShell.instance()
    try:
        found = perflab.open(db).compare(eid)
        shown, _ = shell.display_formatter.format(found)
    finally:
        InteractiveShell.clear_instance()
    assert shown["text/html"] == perflab.api.render(found, "html")
    assert shown["text/plain"].startswith(f"<perflab comparison of experiment {eid} ")


def test_render_refuses_the_terminal_in_one_line(mglru):
    db, eid = mglru
    with pytest.raises(InputError, match="draws on a console"):
        perflab.api.render(perflab.open(db).compare(eid), "terminal")


def test_cross_experiment_compare_matches_the_cli(mglru):
    db, eid = mglru
    r = cli(
        "import",
        str(MGLRU_RUNS),
        "--store",
        str(db),
        "--name",
        "again",
        *mglru_import("ops_per_sec:higher", "p99_latency_ms:lower"),
    )
    assert r.code == 0, r.err
    other = int(r.out.strip().splitlines()[-1])
    result = perflab.open(db).compare(eid, other, variants=["mglru"], method="welch")
    r = cli(
        "compare",
        str(eid),
        str(other),
        "--variant",
        "mglru",
        "--store",
        str(db),
        "--format",
        "csv",
        "--method",
        "welch",
    )
    expected = {
        (row["cell"], row["variant"], row["metric"]): row
        for row in csv.DictReader(io.StringIO(r.out))
        if row["method"] != "sweep"
    }
    assert {(x.cell, x.variant, x.metric.name) for x in result.rows} == set(expected)
    for x in result.rows:
        assert x.estimate * 100 == _num(expected[(x.cell, x.variant, x.metric.name)]["change_pct"])


# -- errors: one line, never a traceback


def _one_line(e: PerflabError) -> str:
    line = e.one_line()
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"confidence": 2}, "confidence must be between 0.5 and 1"),
        ({"threshold": "abc"}, "threshold 'abc'"),
        ({"threshold": 5}, "a fraction below 1"),
        ({"method": "nope"}, "unknown statistical method 'nope'"),
        ({"correction": "nope"}, "unknown correction 'nope'"),
        ({"interval": "nope"}, "interval 'nope'"),
        ({"resamples": 0}, "resamples must be a whole number"),
        ({"metrics": ["nope"]}, "no metric 'nope'"),
        ({"variants": ["nope"]}, "no variant 'nope'"),
        ({"variants": ["baseline"]}, "'baseline' is the baseline"),
        ({"variants": [("baseline", "mglru")]}, "give other=B"),
    ],
)
def test_bad_compare_options_are_one_line_input_errors(mglru, kwargs, words):
    db, eid = mglru
    with pytest.raises(InputError) as e:
        perflab.open(db).compare(eid, **kwargs)
    assert words in _one_line(e.value)


def test_unknown_experiment_and_missing_store(mglru, tmp_path):
    db, _ = mglru
    lab = perflab.open(db)
    for call in (lab.runs, lab.compare, lab.experiment):
        with pytest.raises(StoreError) as e:
            call(99)
        assert "no experiment '99'" in _one_line(e.value)
    missing = tmp_path / "nowhere" / "p.db"
    with pytest.raises(StoreError) as e:
        perflab.open(missing)
    assert str(missing) in _one_line(e.value)
    assert not missing.parent.exists()


# -- perflab.run


def test_run_a_small_experiment(tmp_path):
    spec = write_spec(tmp_path, TINY)
    db = tmp_path / "runs.db"
    exp = perflab.run(spec, store=db)
    assert (exp.status, exp.name, exp.source, exp.baseline) == ("complete", "api-tiny", "run", "a")
    planned = 2 * 2 * (3 + 1)  # cells × variants × (repetitions + warm-up)
    assert (exp.ok, exp.failed) == (planned, 0)
    assert exp.spec_path == str(spec.resolve())

    df = exp.runs()
    assert len(df) == planned * 2
    assert list(df.columns[:4]) == ["experiment", "run_id", "order", "n"]
    assert df["warmup"].sum() == 2 * 2 * 2  # one warm-up run per cell and variant, 2 metrics
    assert df["host"].notna().all() and set(df["status"]) == {"ok"}
    n_out = df[df["metric"] == "n_out"]
    assert list(n_out["value"]) == [float(n) for n in n_out["n"]]  # the command's own output
    assert (df[df["metric"] == "wall_time"]["value"] > 0).all()
    assert set(zip(df["metric"], df["unit"])) == {("wall_time", "s"), ("n_out", "")}
    # the API's compare is the CLI's
    assert_matches_cli_tiny(exp, db)
    # the same spec again: a new experiment (the first is complete)
    again = perflab.run(spec, store=db)
    assert again.id == exp.id + 1 and again.status == "complete"
    assert list(perflab.open(db).experiments()["id"]) == [again.id, exp.id]


def assert_matches_cli_tiny(exp, db) -> None:
    result = exp.compare(correction="none", method="welch")
    expected = cli_compare(db, exp.id, "--correction", "none", "--method", "welch")
    frame = result.to_frame()
    assert len(frame) == 2 * 2  # 2 cells × 2 metrics × 1 candidate
    for r in frame.itertuples(index=False):
        e = expected[(r.cell, r.variant, r.metric)]
        assert (r.p, r.verdict) == (_num(e["p_raw"]), e["verdict"])
        if r.scale != "absolute":
            assert r.estimate * 100 == _num(e["change_pct"])


def test_run_with_failing_runs_returns_the_experiment(tmp_path):
    text = TINY.replace("echo n={n} variant={variant}", "echo n={n}; test {variant} = a")
    spec = write_spec(
        tmp_path,
        text.replace(
            "warmup = 1", 'warmup = 1\non_failure = "continue"\nmax_failure_share = "100%"'
        ),
    )
    exp = perflab.run(spec, store=tmp_path / "p.db", max_failures=0)
    assert exp.status == "complete"
    assert exp.ok == exp.failed == 2 * (3 + 1)  # every run of b fails
    df = exp.runs()
    failed = df[df["status"] == "failed"]
    assert set(failed["variant"]) == {"b"} and failed["value"].isna().all()
    assert df[df["status"] == "ok"]["value"].notna().all()


def test_a_run_that_cannot_start_leaves_ctrl_c_and_the_experiment_as_they_were(
    tmp_path, monkeypatch
):
    # No scratch folder can be made (the temporary directory is gone): the run fails before
    # any step, and gives back the caller's SIGINT/SIGTERM handlers (not the runner's, which
    # would turn every later Ctrl-C into a stop request nothing reads) and the experiment's lock.
    spec = write_spec(tmp_path, TINY)
    db = tmp_path / "p.db"
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(FileNotFoundError):
        perflab.run(spec, store=db)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT id, runner_pid FROM experiments").fetchall() == [(1, None)]
    monkeypatch.undo()
    exp = perflab.run(spec, store=db)  # the same experiment, run now
    assert (exp.id, exp.status, exp.failed) == (1, "complete", 0)


def test_run_errors_are_one_line_and_write_nothing(tmp_path):
    db = tmp_path / "p.db"
    with pytest.raises(InputError) as e:
        perflab.run(store=db)
    assert "give an experiment file, or resume=ID" in _one_line(e.value)
    with pytest.raises(SpecError) as e:
        perflab.run(tmp_path / "missing.toml", store=db)
    assert "experiment file not found" in _one_line(e.value)
    bad = write_spec(tmp_path, TINY.replace('better = "higher"', 'better = "up"'))
    with pytest.raises(SpecError):
        perflab.run(bad, store=db)
    with pytest.raises(InputError):
        perflab.run(bad, store=db, max_failures=-1)
    with pytest.raises(InputError) as e:
        perflab.run(write_spec(tmp_path, TINY, "ok.toml"), store=db, export=["out.txt"])
    assert "unknown format" in _one_line(e.value)
    assert not db.exists()
    with pytest.raises(StoreError):
        perflab.run(resume=3, store=db)
    assert not db.exists()
