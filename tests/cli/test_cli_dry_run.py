"""`perflab run SPEC --dry-run`: the plan, its design and order, and a duration estimated from
earlier runs of the same spec — computed here again, independently, from the store's rows.
A dry run writes nothing: the store stays byte-identical, and a missing one is not created."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
import statistics
from pathlib import Path

from cli_helpers import perflab, write_spec
from perflab.analysis.plan_estimate import estimate_from_path
from perflab.durations import format_duration
from perflab.plan import make_plan
from perflab.spec import load_spec

SPEC = """\
name = "tiny"
baseline = "fast"
repetitions = 3
warmup = 1
seed = 11
{order}

[matrix]
n = [1, 2]

[[variant]]
name = "fast"
[[variant]]
name = "slow"
params = {{ extra = "x" }}
{more}

[[phase]]
name = "work"
command = "echo {{variant}} {{n}}{{extra}}"

[params]
extra = ""

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
"""


def _spec(tmp_path: Path, *, order: str = "", more: str = "", name: str = "spec.toml") -> Path:
    return write_spec(tmp_path, SPEC.format(order=order, more=more), name)


def _files(folder: Path) -> dict[str, str]:
    """Every file of the folder with its SHA-256: what a dry run must leave as it was."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _independent_estimate(db: Path, spec_path: Path) -> tuple[dict[str, float], float, float]:
    """(variant → median ok-run seconds, runs' seconds for the plan, total with overheads),
    straight from the store's rows."""
    con = sqlite3.connect(db)
    try:
        runs = con.execute(
            "SELECT r.experiment_id, r.variant, r.status, r.started_at, r.ended_at"
            " FROM runs r JOIN experiments e ON e.id = r.experiment_id"
            " WHERE e.source = 'run' AND r.started_at IS NOT NULL AND r.ended_at IS NOT NULL"
        ).fetchall()
        exps = con.execute("SELECT id, created_at, finished_at, status FROM experiments").fetchall()
    finally:
        con.close()
    medians: dict[str, float] = {}
    for v in {r[1] for r in runs}:
        medians[v] = statistics.median(
            e - s for _, var, st, s, e in runs if var == v and st == "ok"
        )
    plan = make_plan(load_spec(spec_path).model)
    runs_s = sum(medians[p.variant] for p in plan)
    gaps, starts, ends = [], [], []
    for eid, created, finished, status in exps:
        mine = sorted((s, e) for x, _, _, s, e in runs if x == eid)
        gaps += [b[0] - a[1] for a, b in itertools.pairwise(mine)]
        starts.append(mine[0][0] - created)
        if status == "complete":
            ends.append(finished - max(e for _, e in mine))
    total = (
        runs_s
        + statistics.median(gaps) * (len(plan) - 1)
        + statistics.median(starts)
        + statistics.median(ends)
    )
    return medians, runs_s, total


def test_without_a_store_there_is_no_estimate_and_no_store(tmp_path):
    spec = _spec(tmp_path)
    db = tmp_path / "missing" / "p.db"
    r = perflab("run", str(spec), "--dry-run", "--store", str(db))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith(
        "tiny: 16 runs (12 measured, 4 warm-up), order interleaved (seed 11)"
    )
    assert "2 cells × 2 variants × (3 repetitions + 1 warm-up) = 16 runs" in lines
    assert any(l.startswith("order interleaved (seed 11): each repetition") for l in lines)
    assert lines[-1] == f"no earlier runs of this spec in the store ({db}): no estimate"
    assert not db.parent.exists()


def test_estimate_is_the_median_run_time_of_earlier_runs_times_the_plan(tmp_path):
    spec = _spec(tmp_path)
    db = tmp_path / "p.db"
    for _ in range(2):  # two earlier experiments of the same spec text
        assert perflab("run", str(spec), "--store", str(db), "--new", "--no-compare").code == 0
    before = _files(tmp_path)

    r = perflab("run", str(spec), "--dry-run", "--store", str(db))
    assert r.code == 0, r.err
    assert _files(tmp_path) == before  # nothing written, no -wal or -shm left behind

    medians, runs_s, total = _independent_estimate(db, spec)
    est = estimate_from_path(db, load_spec(spec), make_plan(load_spec(spec).model))
    assert est is not None
    assert est.matched_by == "spec text" and est.experiments == (1, 2)
    assert {v.variant: v.median_seconds for v in est.variants} == medians
    assert {v.variant: v.planned for v in est.variants} == {"fast": 8, "slow": 8}
    assert est.runs_seconds == sum(8 * m for m in medians.values())
    assert abs(est.runs_seconds - runs_s) < 1e-9
    assert abs(est.total_seconds - total) < 1e-9
    assert est.total_seconds > est.runs_seconds  # the pauses and the start are counted
    line = next(l for l in r.out.splitlines() if l.startswith("estimated duration: "))
    assert line.startswith(f"estimated duration: {format_duration(total)} (")
    assert f"fast {format_duration(medians['fast'])} × 8" in line
    assert "2 earlier experiments with the same spec text (#1, #2)" in r.out
    assert _files(tmp_path) == before


def test_a_changed_spec_is_matched_by_name_and_a_new_variant_gets_the_overall_median(tmp_path):
    db = tmp_path / "p.db"
    first = _spec(tmp_path)
    assert perflab("run", str(first), "--store", str(db), "--no-compare").code == 0
    changed = _spec(
        tmp_path, more='[[variant]]\nname = "new"', order='order = "sequential"', name="b.toml"
    )
    r = perflab("run", str(changed), "--dry-run", "--store", str(db))
    assert r.code == 0, r.err
    assert "order sequential: cell by cell, variant by variant" in r.out
    assert "2 cells × 3 variants × (3 repetitions + 1 warm-up) = 24 runs" in r.out
    assert "new " in r.out and "(never ran: median of all variants)" in r.out
    assert "1 earlier experiment with the same name (#1)" in r.out
    est = estimate_from_path(db, load_spec(changed), make_plan(load_spec(changed).model))
    assert est is not None and est.matched_by == "name"
    medians, _, _ = _independent_estimate(db, first)
    con = sqlite3.connect(db)
    every = statistics.median(
        e - s for s, e in con.execute("SELECT started_at, ended_at FROM runs WHERE status='ok'")
    )
    con.close()
    got = {v.variant: (v.median_seconds, v.measured_runs) for v in est.variants}
    assert got == {"fast": (medians["fast"], 8), "slow": (medians["slow"], 8), "new": (every, 0)}


def test_another_experiment_name_gives_no_estimate(tmp_path):
    db = tmp_path / "p.db"
    assert perflab("run", str(_spec(tmp_path)), "--store", str(db), "--no-compare").code == 0
    other = write_spec(tmp_path, SPEC.format(order="", more="").replace("tiny", "other"), "o.toml")
    before = _files(tmp_path)
    r = perflab("run", str(other), "--dry-run", "--store", str(db))
    assert r.code == 0, r.err
    assert (
        r.out.splitlines()[-1] == f"no earlier runs of this spec in the store ({db}): no estimate"
    )
    assert _files(tmp_path) == before
