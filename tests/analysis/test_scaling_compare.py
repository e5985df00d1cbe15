"""`perflab compare ID --scaling PARAM`: cost = a + b·n^k per variant, the per-unit cost and
the candidate's "degradation" against the baseline (the lookup-structure
experiment), through the real CLI: a
synthetic import with a known truth, the error cases (one line each, exit 2), one fit per
combination of the other parameters, the report, and a small real run of the
lookup-structure experiment's program (values stored with the experiment)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from cli_helpers import perflab, write_spec

LABELS = {"1K": 1e3, "10K": 1e4, "100K": 1e5, "1M": 1e6, "10M": 1e7, "100M": 1e8, "1G": 1e9}
A, B = 5.0, 2e-9  # seconds, seconds per key
SLOWER = 1.06  # the candidate costs 6% more per key


def _import(tmp_path, rows_of, params=("keys",), name="scale"):
    path = tmp_path / f"{name}.csv"
    rows = list(rows_of())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    db = tmp_path / f"{name}.db"
    args = [
        "import",
        str(path),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--baseline",
        "old",
        "--metric",
        "load_time:lower:s",
        "--metric",
        "flat_ms:lower:ms",
    ]
    for p in params:
        args += ["--param", p]
    r = perflab(*args)
    assert r.code == 0, r.err
    return str(db), r.out.strip().splitlines()[-1]


def _runs(labels=LABELS, runs=20, seed=2, extra=None):
    """load_time = 5 s + 2 ns·keys (old) or 5 s + 2.12 ns·keys (new), 0.5% noise; flat_ms ≈ 3 ms,
    falling slightly with keys (a cost a + b·keys^k with b > 0 cannot follow)."""
    rng = np.random.default_rng(seed)
    for label, n in labels.items():
        for variant, b in (("old", B), ("new", B * SLOWER)):
            for _ in range(runs):
                cost = float((A + b * n) * (1 + 0.005 * rng.standard_normal()))
                row = {
                    "variant": variant,
                    "keys": label,
                    "load_time": repr(cost),
                    "flat_ms": repr(
                        float(3.0 * (1 - 0.002 * np.log10(n)) * (1 + 0.01 * rng.standard_normal()))
                    ),
                }
                yield {**row, **(extra or {})}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return _import(tmp_path_factory.mktemp("scaling"), _runs)


def test_recovers_a_known_cost_model_and_says_degradation(synthetic, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table on one line per row (80: test_terminal_width)
    db, eid = synthetic
    doc = json.loads(perflab("compare", eid, "--store", db, "--scaling", "keys", "--json").out)
    assert (
        doc["schema"] == "perflab.scaling/1" and doc["param"] == "keys" and doc["exponent"] is None
    )
    load = next(g for g in doc["groups"] if g["metric"]["name"] == "load_time")
    assert load["sizes"] == sorted(LABELS.values()) and load["size_labels"] == list(LABELS)
    assert load["at"] == 1e9 and load["fixed"] == {}
    old, new = load["fits"]
    assert (old["variant"], old["baseline"], new["variant"]) == ("old", True, "new")
    assert old["a"]["low"] < A < old["a"]["high"]
    assert old["k"]["low"] < 1 < old["k"]["high"] and new["k"]["low"] < 1 < new["k"]["high"]
    assert old["per_unit"]["low"] < B < old["per_unit"]["high"]  # seconds per key
    assert new["per_unit"]["low"] < B * SLOWER < new["per_unit"]["high"]
    vs = new["vs_baseline"]
    assert vs["low"] < SLOWER - 1 < vs["high"] and vs["low"] > 0 and vs["verdict"] == "worse"
    assert (
        vs["text"]
        == f"degradation {vs['estimate'] * 100:.1f}% [{vs['low'] * 100:.1f}, {vs['high'] * 100:.1f}]"
    )
    assert old["vs_baseline"] is None

    term = perflab("compare", eid, "--store", db, "--scaling", "keys", "--metric", "load_time")
    assert term.code == 0, term.err
    out = " ".join(term.out.split())
    assert "load_time (s) against keys: cost = a + b·keys^k" in out
    assert "per-unit cost at 1G (ns per key)" in out and "fixed cost a (s)" in out
    row = next(line for line in term.out.splitlines() if line.startswith("│ new"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[5] == vs["text"]
    per_key = re.fullmatch(r"([\d.]+) \[([\d.]+), ([\d.]+)\]", cells[2])
    assert per_key and float(per_key.group(2)) < 2.12 < float(
        per_key.group(3)
    )  # in ns, not 2.1e-09 s
    assert "flat_ms" not in term.out  # --metric chose one


def test_fixed_exponent_at_a_size_and_the_other_formats(synthetic):
    db, eid = synthetic
    args = [
        "compare",
        eid,
        "--store",
        db,
        "--scaling",
        "keys",
        "--exponent",
        "1",
        "--at",
        "100M",
        "--metric",
        "load_time",
    ]
    doc = json.loads(perflab(*args, "--json").out)
    (g,) = doc["groups"]
    assert doc["exponent"] == 1 and doc["at"] == 1e8 and g["at"] == 1e8
    old, new = g["fits"]
    assert old["exponent_fixed"] and old["k"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert old["per_unit"]["low"] < B < old["per_unit"]["high"]
    assert new["vs_baseline"]["low"] < 0.06 < new["vs_baseline"]["high"]
    md = perflab(*args, "--format", "markdown").out
    assert (
        "| variant | fixed cost a (s) | per-unit cost at 100M (ns per key) | exponent k | χ²/df | vs old |"
        in md
    )
    assert re.search(
        r"^\| new \| .* \| 1 \(fixed\) \| [\d.]+ \| degradation [\d.]+% \[[\d.]+, [\d.]+\] ❌ \|$",
        md,
        re.M,
    )
    rows = list(csv.DictReader(io.StringIO(perflab(*args, "--format", "csv").out)))
    assert [r["variant"] for r in rows] == ["old", "new"]
    assert (
        float(rows[1]["vs_low_pct"]) < 6 < float(rows[1]["vs_high_pct"])
        and rows[1]["verdict"] == "worse"
    )
    assert (
        float(rows[0]["per_unit"]) == pytest.approx(old["per_unit"]["value"])
        and rows[0]["at"] == "100000000.0"
    )
    # a CI gate on the per-unit cost
    assert perflab(*args, "--fail-if-worse", "10").code == 0
    gate = perflab(*args, "--fail-if-worse", "1")
    assert gate.code == 1 and "regression: per-unit load_time for new: +" in gate.err


def test_a_cost_that_does_not_grow_is_said_not_fitted(synthetic):
    db, eid = synthetic
    r = perflab("compare", eid, "--store", db, "--scaling", "keys", "--metric", "flat_ms")
    assert r.code == 0, r.err
    row = next(line for line in r.out.splitlines() if line.startswith("│ new"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[2] == "–" and cells[5] == "n/a"  # no per-unit cost, no false precision
    assert "the cost does not grow measurably with n" in " ".join(r.out.split())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scaling", "size"], "no matrix parameter 'size' (parameters: keys)"),
        (
            ["--scaling", "keys", "--metric", "nope"],
            "no metric 'nope' (metrics: load_time, flat_ms)",
        ),
        (["--exponent", "1"], "--exponent goes with --scaling PARAM"),
        (["--scaling", "keys", "--at", "lots"], "--at 'lots': expected a positive size"),
        (["--scaling", "keys", "--exponent", "0"], "--exponent must be a positive number"),
        (["--scaling", "keys", "--method", "bootstrap"], "--method, --interval"),
    ],
)
def test_argument_errors_are_one_line(synthetic, argv, message):
    db, eid = synthetic
    r = perflab("compare", eid, "--store", db, *argv)
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err


def test_data_errors_are_one_line(tmp_path):
    # a parameter that is not numeric
    db, eid = _import(
        tmp_path, lambda: _runs(extra={"mode": "fast"}), params=("keys", "mode"), name="words"
    )
    r = perflab("compare", eid, "--store", db, "--scaling", "mode")
    assert (
        r.code == 2
        and "matrix parameter 'mode' is not numeric: its value 'fast' is not a number" in r.err
    )
    # three sizes: enough for a and b only
    three = {k: LABELS[k] for k in ("1K", "1M", "1G")}
    db, eid = _import(tmp_path, lambda: _runs(labels=three), name="three")
    r = perflab("compare", eid, "--store", db, "--scaling", "keys")
    assert r.code == 2 and "needs ≥ 4 distinct values of it (or give --exponent K" in r.err
    assert perflab("compare", eid, "--store", db, "--scaling", "keys", "--exponent", "1").code == 0
    two = {k: LABELS[k] for k in ("1K", "1G")}
    db, eid = _import(tmp_path, lambda: _runs(labels=two), name="two")
    r = perflab("compare", eid, "--store", db, "--scaling", "keys", "--exponent", "1")
    assert r.code == 2 and "needs ≥ 3 distinct values" in r.err and r.err.count("\n") == 1

    # one run at a size
    def one_run():
        for row in _runs(runs=3):
            if row["keys"] != "10K" or row["variant"] != "new" or not one_run.seen:
                one_run.seen |= row["keys"] == "10K" and row["variant"] == "new"
                yield row

    one_run.seen = False
    db, eid = _import(tmp_path, one_run, name="one")
    r = perflab("compare", eid, "--store", db, "--scaling", "keys")
    assert r.code == 2 and r.err.count("\n") == 1
    assert (
        "keys=10K · new · load_time: 1 run(s); a scaling fit needs ≥ 2 runs at every value of 'keys'"
        in r.err
    )


def test_one_fit_per_combination_of_the_other_parameters(tmp_path):
    def rows():
        for threads in ("1", "2"):
            yield from _runs(seed=1 + int(threads), extra={"threads": threads}, runs=10)

    db, eid = _import(tmp_path, rows, params=("keys", "threads"), name="threads")
    doc = json.loads(
        perflab(
            "compare", eid, "--store", db, "--scaling", "keys", "--metric", "load_time", "--json"
        ).out
    )
    assert [g["fixed"] for g in doc["groups"]] == [{"threads": "1"}, {"threads": "2"}]
    assert all(g["fits"][1]["vs_baseline"]["verdict"] == "worse" for g in doc["groups"])
    out = perflab("compare", eid, "--store", db, "--scaling", "keys", "--metric", "load_time").out
    assert (
        "load_time (s) against keys at threads=1" in out
        and "load_time (s) against keys at threads=2" in out
    )


def test_report_carries_the_scaling_fit(synthetic):
    db, eid = synthetic
    r = perflab(
        "report", eid, "--store", db, "--scaling", "keys", "--metric", "load_time", "--json"
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["scaling"]["schema"] == "perflab.scaling/1"
    assert doc["scaling"]["groups"][0]["fits"][1]["vs_baseline"]["verdict"] == "worse"
    assert "scaling-fit" in [s["id"] for s in doc["sections"]]
    assert any("--scaling keys --metric load_time" in x["command"] for x in doc["reproduce"])
    plain = json.loads(perflab("report", eid, "--store", db, "--json").out)
    assert plain["scaling"] is None and "scaling-fit" not in [s["id"] for s in plain["sections"]]
    assert plain["comparison"]["sweeps"]  # 7 cells: the geometric mean is there too


SOURCE = Path(__file__).resolve().parents[2] / "examples" / "physseg" / "physseg.c"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_physseg_lookups_scale_linearly(tmp_path):
    """The lookup-structure experiment's program, 4 sizes × 2 variants × 4 runs (a few
    seconds): values stored with the experiment (``1K`` = 1000), a per-lookup cost in ns."""
    binary = tmp_path / "physseg"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(SOURCE)], check=True, timeout=120)
    spec = write_spec(
        tmp_path,
        f"""\
name = "physseg-small"
baseline = "array"
repetitions = 4
[matrix]
lookups = {{ "10K" = 10000, "100K" = 100000, "300K" = 300000, "1M" = 1000000 }}
[[variant]]
name = "array"
params = {{ impl = "array" }}
[[variant]]
name = "rbtree"
params = {{ impl = "rbtree" }}
[[phase]]
name = "lookup"
command = "{binary} --impl {{impl}} --lookups {{lookups}} --segments 16 --seed {{seed}}"
shell = false
[[metric]]
name = "lookup_time"
unit = "s"
better = "lower"
json = "seconds"
""",
    )
    db = str(tmp_path / "p.db")
    r = perflab("run", str(spec), "--store", db, "--no-compare")
    assert r.code == 0, r.err
    doc = json.loads(
        perflab(
            "compare", "1", "--store", db, "--scaling", "lookups", "--exponent", "1", "--json"
        ).out
    )
    (g,) = doc["groups"]
    assert g["size_labels"] == ["10K", "100K", "300K", "1M"] and g["sizes"] == [1e4, 1e5, 3e5, 1e6]
    for fit in g["fits"]:
        assert 1e-10 < fit["per_unit"]["value"] < 1e-6  # 0.1 ns … 1 µs per lookup
    wide = {**os.environ, "COLUMNS": "200"}  # headers on one line (80: test_terminal_width)
    with mock.patch.dict(os.environ, wide):
        out = perflab("compare", "1", "--store", db, "--scaling", "lookups", "--exponent", "1").out
    assert "per-unit cost at 1M (ns per lookup)" in " ".join(out.split())
