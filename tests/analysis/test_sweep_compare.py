"""The sweep summary under every TLDR table (the kernel-bypass memcached scaling
experiment's "average gain across 1..28 instances"): the geometric-mean ratio over the
cells, through import + compare, in every output format, against `stats.sweep_summary` on
the same runs."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from cli_helpers import perflab
from perflab.stats import sweep_summary

INSTANCES = [1, 2, 4, 8, 16, 28]


def _import(tmp_path, gains, runs=10, cv=0.03, seed=1, skip=()):
    """Throughput of 'kernel' vs 'bypass' at each instance count; ``gains[i]`` = true ratio."""
    rng = np.random.default_rng(seed)
    path = tmp_path / "sweep.csv"
    samples = {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "instances", "ops_per_sec", "p99_ms"])
        for n, gain in zip(INSTANCES, gains):
            for variant, factor in (("kernel", 1.0), ("bypass", gain)):
                k = 1 if (n, variant) in skip else runs
                ops = rng.normal(1e5 * n * factor, 1e5 * n * factor * cv, k)
                p99 = rng.normal(2.0 / factor, 2.0 / factor * cv, k)
                samples[(n, variant)] = (ops, p99)
                for o, p in zip(ops, p99):
                    w.writerow([variant, n, repr(float(o)), repr(float(p))])
    db = tmp_path / "p.db"
    r = perflab(
        "import",
        str(path),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--param",
        "instances",
        "--metric",
        "ops_per_sec:higher",
        "--metric",
        "p99_ms:lower",
        "--baseline",
        "kernel",
    )
    assert r.code == 0, r.err
    return str(db), r.out.strip().splitlines()[-1], samples


def test_sweep_numbers_match_stats_in_json_csv_terminal_and_markdown(tmp_path):
    gains = [1.05] * len(INSTANCES)
    db, eid, samples = _import(tmp_path, gains)
    doc = json.loads(perflab("compare", eid, "--store", db, "--json").out)
    sweeps = {s["metric"]: s for s in doc["sweeps"]}
    assert set(sweeps) == {"ops_per_sec", "p99_ms"}
    for i, metric in enumerate(("ops_per_sec", "p99_ms")):
        want = sweep_summary(
            [(samples[(n, "kernel")][i], samples[(n, "bypass")][i]) for n in INSTANCES]
        )
        got = sweeps[metric]
        assert got["variant"] == "bypass" and got["cells"] == 6 and got["total_cells"] == 6
        assert got["left_out"] == [] and got["label"] == "all 6 cells (geometric mean)"
        for key, value in (
            ("ratio", want.ratio),
            ("ratio_low", want.low),
            ("ratio_high", want.high),
            ("change", want.change),
            ("low", want.change_low),
            ("high", want.change_high),
            ("i_squared", want.i_squared),
            ("q_statistic", want.q_statistic),
        ):
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        assert got["cell_ratios"] == pytest.approx(list(want.cell_ratios), rel=1e-12)
    ops, p99 = sweeps["ops_per_sec"], sweeps["p99_ms"]
    # +5% throughput, 1/1.05 − 1 = −4.8% latency: both better, inside their intervals
    assert ops["low"] < 0.05 < ops["high"] and ops["verdict"] == "better"
    assert p99["low"] < 1 / 1.05 - 1 < p99["high"] and p99["verdict"] == "better"
    text = f"+[{ops['low'] * 100:.1f}, {ops['high'] * 100:.1f}]%"
    assert ops["tldr"] == text
    assert not [
        w for w in doc["warnings"] if w["code"].startswith("sweep")
    ]  # the same gain everywhere

    term = perflab("compare", eid, "--store", db, "--no-summary")
    assert term.code == 0, term.err
    row = next(
        line for line in term.out.splitlines() if "geometric mean)" in line and line.startswith("│")
    )
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "all 6 cells (geometric mean)",
        f"{text} better",
        f"{p99['tldr']} better",
    ]
    lines = term.out.splitlines()
    assert lines[lines.index(row) - 1].startswith("├")  # under a rule, after the cells

    md = perflab("compare", eid, "--store", db, "--format", "markdown").out
    assert f"| **all 6 cells (geometric mean)** | **{text}** ✅ | **{p99['tldr']}** ✅ |" in md

    rows = list(
        csv.DictReader(io.StringIO(perflab("compare", eid, "--store", db, "--format", "csv").out))
    )
    sweep_rows = [r for r in rows if r["method"] == "sweep"]
    assert [(r["metric"], r["cell"], r["cells"]) for r in sweep_rows] == [
        ("ops_per_sec", "all 6 cells (geometric mean)", "6"),
        ("p99_ms", "all 6 cells (geometric mean)", "6"),
    ]
    assert float(sweep_rows[0]["ci_low_pct"]) == pytest.approx(ops["low"] * 100)
    assert float(sweep_rows[0]["i_squared"]) == pytest.approx(ops["i_squared"])
    assert sweep_rows[0]["n_baseline"] == "60" and sweep_rows[0]["tldr"] == text
    assert all(r["cells"] == r["i_squared"] == "" for r in rows if r["method"] != "sweep")


def test_a_trend_across_the_sweep_is_named_and_ns_when_it_averages_out(tmp_path, monkeypatch):
    """Gains from −20% to +25%, symmetric on the log scale: the average is NS and hides a trend."""
    monkeypatch.setenv("COLUMNS", "200")  # each row on one line (80: test_terminal_width)
    db, eid, _ = _import(tmp_path, [0.8, 0.9, 1.0, 1.0, 1 / 0.9, 1.25])
    r = perflab("compare", eid, "--store", db, "--no-summary")
    assert r.code == 0, r.err
    row = next(line for line in r.out.splitlines() if "geometric mean)" in line)
    assert [c.strip() for c in row.split("│")[1:-1]][1:] == ["NS", "NS"]
    warning = " ".join(r.out.split())
    assert "the geometric mean over 6 cells hides a trend across instances" in warning
    assert "at instances=1 to" in warning and "at instances=28 (I² = " in warning
    assert f"perflab compare {eid} --scaling instances" in warning
    doc = json.loads(perflab("compare", eid, "--store", db, "--json").out)
    het = [w for w in doc["warnings"] if w["code"] == "sweep_heterogeneous"]
    assert {w["metric"] for w in het} == {"ops_per_sec", "p99_ms"}
    assert all(w["details"]["i_squared"] > 0.9 and w["variant"] == "bypass" for w in het)


def test_cells_with_too_few_runs_are_left_out_with_a_note(tmp_path):
    db, eid, samples = _import(tmp_path, [1.1] * len(INSTANCES), skip={(8, "bypass")})
    doc = json.loads(perflab("compare", eid, "--store", db, "--json").out)
    ops = next(s for s in doc["sweeps"] if s["metric"] == "ops_per_sec")
    assert (
        ops["cells"] == 5
        and ops["left_out"] == ["instances=8"]
        and ops["label"] == "5 of 6 cells (geometric mean)"
    )
    want = sweep_summary(
        [(samples[(n, "kernel")][0], samples[(n, "bypass")][0]) for n in INSTANCES if n != 8]
    )
    assert ops["low"] == pytest.approx(want.change_low) and ops["high"] == pytest.approx(
        want.change_high
    )
    notes = [w["message"] for w in doc["warnings"] if w["code"] == "sweep_cells_left_out"]
    assert notes and all("leaves out instances=8" in n for n in notes)
    out = perflab("compare", eid, "--store", db, "--no-summary").out
    assert "5 of 6 cells (geometric mean)" in out


def test_no_sweep_for_a_single_cell(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text(
        "variant,t\n" + "".join(f"{v},{x}\n" for v in ("a", "b") for x in (1.0, 1.1, 0.9, 1.05))
    )
    db = tmp_path / "p.db"
    r = perflab(
        "import",
        str(path),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--metric",
        "t:lower",
        "--baseline",
        "a",
    )
    assert r.code == 0, r.err
    doc = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    assert doc["sweeps"] == []
    assert "geometric mean" not in perflab("compare", "1", "--store", str(db)).out
