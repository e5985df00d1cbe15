"""`perflab export ID -o runs.csv|runs.parquet`: the tidy runs table (`perflab.open(db).runs(ID)`)
written whole, the format from the name or --format, CSV on stdout with ``-o -``; bad input
is one line, exit 2, nothing written, and the store is never changed."""

from __future__ import annotations

import csv
import io
import os

import pandas as pd
import perflab
import pytest
from cli_helpers import mglru_store as import_mglru
from cli_helpers import one_error, write_spec
from cli_helpers import perflab as cli
from testdata import MGLRU_RUNS, TINY, csv_rows, fingerprint

METRICS = ("ops_per_sec", "p99_latency_ms")


@pytest.fixture
def mglru(tmp_path):
    return import_mglru(tmp_path)


def export(db, *argv: str):
    return cli("export", *argv, "--store", str(db))


def test_csv_file_holds_every_run_and_metric(mglru, tmp_path):
    db, eid = mglru
    out = tmp_path / "out" / "runs.csv"  # a missing folder is created
    r = export(db, str(eid), "-o", str(out))
    assert (r.code, r.out, r.err) == (0, "", "")
    rows = list(csv.DictReader(out.open(newline="")))
    source = csv_rows(MGLRU_RUNS)
    assert len(rows) == len(source) * len(METRICS) == 80
    for metric in METRICS:
        got = sorted((int(x["order"]), x) for x in rows if x["metric"] == metric)
        assert [float(x["value"]) for _, x in got] == [float(s[metric]) for s in source]
        assert [x["variant"] for _, x in got] == [s["variant"] for s in source]
        assert [x["ram_utilization_pct"] for _, x in got] == [
            s["ram_utilization_pct"] for s in source
        ]
        assert {x["status"] for _, x in got} == {"ok"} and {x["experiment"] for _, x in got} == {
            str(eid)
        }
    # the same table as the API's
    api = perflab.open(db).runs(eid)
    back = pd.read_csv(out, dtype={"ram_utilization_pct": str})
    assert list(back.columns) == list(api.columns)
    assert list(back["value"]) == list(api["value"]) and list(back["run_id"]) == list(api["run_id"])


def test_stdout_is_csv_and_the_same_as_the_file(mglru, tmp_path):
    db, _ = mglru
    out = tmp_path / "runs.csv"
    assert export(db, "last", "-o", str(out)).code == 0
    dash = export(db, "last", "-o", "-")
    default = export(db, "last")
    assert dash.code == default.code == 0 and dash.err == ""
    assert dash.out == default.out == out.read_text()
    assert len(list(csv.DictReader(io.StringIO(dash.out)))) == 80


def test_parquet_round_trip(mglru, tmp_path):
    db, eid = mglru
    out = tmp_path / "runs.parquet"
    r = export(db, str(eid), "-o", str(out))
    assert r.code == 0, r.err
    assert out.read_bytes()[:4] == b"PAR1"
    pd.testing.assert_frame_equal(pd.read_parquet(out), perflab.open(db).runs(eid))
    # --format wins over the name
    forced = tmp_path / "runs.data"
    assert export(db, str(eid), "-o", str(forced), "--format", "parquet").code == 0
    pd.testing.assert_frame_equal(pd.read_parquet(forced), pd.read_parquet(out))
    as_csv = tmp_path / "runs.txt"
    assert export(db, str(eid), "-o", str(as_csv), "--format", "csv").code == 0
    assert as_csv.read_text() == export(db, str(eid)).out


def test_a_real_experiment_exports_its_warmups_failures_and_hosts(tmp_path):
    text = TINY.replace("echo n={n} variant={variant}", "echo n={n}; test {variant} = a")
    spec = write_spec(
        tmp_path,
        text.replace(
            "warmup = 1",
            'warmup = 1\non_failure = "continue"\nmax_failures = 0\nmax_failure_share = "100%"',
        ),
    )
    db = tmp_path / "p.db"
    r = cli("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1, r.err  # b fails every run
    out = tmp_path / "runs.parquet"
    assert export(db, "last", "-o", str(out)).code == 0
    df = pd.read_parquet(out)
    pd.testing.assert_frame_equal(df, perflab.open(db).runs("last"))
    assert len(df) == 2 * 2 * (3 + 1) * 2  # cells × variants × (repetitions + warm-up) × metrics
    assert df["warmup"].sum() == 2 * 2 * 2 and df["host"].notna().all()
    assert set(df[df["status"] == "failed"]["variant"]) == {"b"}
    assert df[df["status"] == "failed"]["value"].isna().all()
    ok = df[(df["status"] == "ok") & (df["metric"] == "n_out")]
    assert list(ok["value"]) == [float(n) for n in ok["n"]]


def test_export_never_changes_the_store(mglru, tmp_path):
    db, eid = mglru
    (tmp_path / "out").mkdir()
    before = fingerprint(tmp_path)
    assert export(db, str(eid), "-o", str(tmp_path / "out" / "runs.parquet")).code == 0
    assert export(db, str(eid)).code == 0
    after = fingerprint(tmp_path)
    assert after == before  # the store's files, byte for byte; nothing beside them


# -- bad input: one line, exit 2, nothing written


def test_unknown_experiment_writes_nothing_and_keeps_an_old_file(mglru, tmp_path):
    db, _ = mglru
    out = tmp_path / "runs.csv"
    line = one_error(export(db, "99", "-o", str(out)))
    assert "no experiment '99'" in line
    assert not out.exists()
    out.write_text("previous\n")
    one_error(export(db, "99", "-o", str(out)))
    assert out.read_text() == "previous\n"


def test_missing_store_is_one_line_and_creates_nothing(tmp_path):
    db = tmp_path / "none.db"
    out = tmp_path / "runs.csv"
    line = one_error(export(db, "last", "-o", str(out)))
    assert str(db) in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name, extra, words",
    [
        ("runs.xlsx", [], "cannot tell the format of 'runs.xlsx'"),
        ("-", ["--format", "parquet"], "parquet is binary"),
        ("runs.csv", ["--format", "json"], "argument --format: invalid choice"),
    ],
)
def test_bad_format_is_one_line_before_the_store_is_read(mglru, tmp_path, name, extra, words):
    db, eid = mglru
    out = name if name == "-" else str(tmp_path / name)
    before = fingerprint(tmp_path)
    r = export(db, str(eid), "-o", out, *extra)
    assert words in one_error(r) and r.out == ""
    assert fingerprint(tmp_path) == before


def test_unwritable_outputs_are_one_line(mglru, tmp_path):
    db, eid = mglru
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert "it is a folder" in one_error(export(db, str(eid), "-o", str(folder)))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "is not a folder" in one_error(export(db, str(eid), "-o", str(blocker / "runs.csv")))
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            assert "not writable" in one_error(export(db, str(eid), "-o", str(ro / "runs.csv")))
        finally:
            ro.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder", "file", "p.db"] + (
        ["ro"] if os.geteuid() != 0 else []
    )
