"""Overhead subtraction end to end (the lookup-structure experiment's random() run, hyperfine's
shell correction): measured in every run, stored net with its parts, compared with the
overhead's uncertainty propagated by every method, and bad declarations are one-line errors."""

from __future__ import annotations

import json
import sqlite3

import pytest
from cli_helpers import perflab, write_spec
from perflab.stats import compare_net, get_method

# Deterministic per run seed: gross = work·(1 + 1%·z₁) + overhead·(1 + 3%·z₂); the overhead
# program prints only its own part, drawn with an independent stream of the same seed.
GEN = """\
import json, random, sys
kind, seed, work, over = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
r = random.Random(seed)
w = work * (1 + 0.01 * r.gauss(0, 1))
o = over * (1 + 0.03 * random.Random(seed + 10**6).gauss(0, 1))
print(json.dumps({"t": w + o if kind == "gross" else o, "other": 1.0}))
"""

SPEC = """\
name = "overhead"
baseline = "array"
repetitions = 12
seed = 3

[params]
gen = "{gen}"
over = 50

[[variant]]
name = "array"
params = {{ work = 100, over_b = 50 }}
[[variant]]
name = "tree"
params = {{ work = 106, over_b = {over_b} }}

[[phase]]
name = "lookup"
shell = false
command = "python3 {{gen}} gross {{seed}} {{work}} {{over_b}}"
{phase2}
[[metric]]
name = "t"
json = "t"
unit = "ms"
better = "lower"
{source}
"""

CALIB = """
[[phase]]
name = "calibrate"
shell = false
command = "python3 {gen} overhead {seed} 0 {over_b}"
"""


def make(
    tmp_path,
    *,
    source='overhead = "python3 {gen} overhead {seed} 0 {over_b}"',
    phase2="",
    over_b=50,
    name="spec.toml",
):
    gen = tmp_path / "gen.py"
    gen.write_text(GEN)
    return write_spec(
        tmp_path, SPEC.format(gen=gen, source=source, phase2=phase2, over_b=over_b), name
    )


def stored(db) -> dict:
    con = sqlite3.connect(db)
    try:
        out: dict = {}
        for variant, name, value in con.execute(
            "SELECT r.variant, m.name, m.value FROM runs r JOIN metrics m ON m.run_id = r.id "
            "WHERE r.status='ok' ORDER BY r.order_index"
        ):
            out.setdefault((variant, name), []).append(value)
        return out
    finally:
        con.close()


@pytest.mark.parametrize("how", ["command", "phase"])
def test_overhead_is_subtracted_per_run_and_compared_with_its_uncertainty(tmp_path, how):
    spec = (
        make(tmp_path)
        if how == "command"
        else make(tmp_path, source='overhead_phase = "calibrate"', phase2=CALIB)
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    v = stored(db)
    for variant in ("array", "tree"):
        gross, over, net = v[(variant, "t.gross")], v[(variant, "t.overhead")], v[(variant, "t")]
        assert len(net) == 12
        assert all(abs(n - (g - o)) < 1e-9 for n, g, o in zip(net, gross, over))
        assert (
            min(over) > 40 and max(over) < 60
        )  # the overhead program's own value, not the gross one
    # the TLDR is the change of net times (true +6%; the gross times change by only +4%,
    # 106+50 vs 100+50), from the per-run net values, so the overhead's own noise — shared
    # by both measurements of a run in this generator — cancels run by run
    out = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    (c,) = [x for x in out["comparisons"] if x["metric"] == "t"]
    expected = get_method("welch").compare(v[("array", "t")], v[("tree", "t")], 0.95)
    assert (c["low"], c["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert 0.04 < c["low"] < 0.06 < c["high"]
    # pooling the overhead runs (stats.compare_net) ignores that within-run correlation: wider here
    pooled = compare_net(
        v[("array", "t.gross")],
        v[("tree", "t.gross")],
        v[("array", "t.overhead")] + v[("tree", "t.overhead")],
        0.95,
    )
    assert c["high"] - c["low"] < pooled.high - pooled.low
    # the parts are not metrics of their own in the TLDR
    assert {x["metric"] for x in out["comparisons"]} == {"t"}
    assert "overhead" in perflab("show", "1", "--store", str(db)).out


def test_an_overhead_that_differs_between_variants_is_taken_from_each_variants_runs(tmp_path):
    # e.g. two kernels whose random() costs differ: each run's own overhead is subtracted
    spec = make(tmp_path, over_b=80)
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code == 0
    out = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    (c,) = out["comparisons"]
    assert c["low"] < 0.06 < c["high"] and c["low"] > 0.04  # net +6%, though gross is +20%
    for method in ("bootstrap", "mannwhitney", "paired"):
        other = json.loads(
            perflab("compare", "1", "--store", str(db), "--json", "--method", method).out
        )
        (o,) = other["comparisons"]
        assert o["low"] < 0.06 < o["high"], (method, o)


def test_an_overhead_larger_than_the_work_is_a_warning(tmp_path):
    text = (
        make(tmp_path)
        .read_text()
        .replace("over = 50", "over = 50")
        .replace("work = 100, over_b = 50", "work = 10, over_b = 50")
        .replace("work = 106, over_b = 50", "work = 11, over_b = 50")
    )
    spec = write_spec(tmp_path, text, "big.toml")
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code == 0
    r = perflab("compare", "1", "--store", str(db))
    assert "the overhead is 8" in r.out and "do more work per run" in r.out


@pytest.mark.parametrize(
    "source, phase2, message",
    [
        (
            'overhead = "x"\noverhead_phase = "calibrate"',
            CALIB,
            "has both 'overhead' and 'overhead_phase'",
        ),
        (
            'overhead_phase = "calibrat"',
            CALIB,
            "names unknown phase 'calibrat' (did you mean 'calibrate'?)",
        ),
        (
            'overhead_phase = "lookup"',
            "",
            "the overhead phase must differ from the metric's own phase",
        ),
        ('overhead = "python3 {nope}"', "", "unknown parameter '{nope}'"),
        ('overhead = "  "', "", "the overhead command is empty"),
    ],
)
def test_bad_overhead_declarations_are_one_line_errors(tmp_path, source, phase2, message):
    spec = make(
        tmp_path,
        source=source,
        phase2=phase2.replace("{", "{{").replace("}", "}}"),
        name="bad.toml",
    )
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert r.code == 2
    text = spec.read_text().splitlines()
    line = next(i for i, l in enumerate(text, 1) if l.startswith(source.split(" ")[0]))
    assert message in r.err and "bad.toml:" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
    if "both" not in message:
        assert f"bad.toml:{line}:" in r.err
