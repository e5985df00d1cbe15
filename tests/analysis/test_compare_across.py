"""`perflab compare ID --across PARAM=VALUE`: every cell against the cell where PARAM=VALUE
(and the same other parameters), within each variant — on a synthetic sweep with known truth
(throughput ×2 at n=2 and exactly ×3 at n=4 against n=1, for both variants and both modes),
against the stats methods and `stats.sweep_summary` called by hand on the same runs, in every
output format, and its errors as one line (exit 2)."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from cli_helpers import perflab
from perflab.stats import get_method, sweep_summary
from perflab.stats.sweep import shared_reference_summary

NS = (1, 2, 4)
GAIN = {1: 1.0, 2: 2.0, 4: 3.0}  # throughput at n against n=1: the known truth
MODES = {"x": 1.0, "y": 10.0}  # mode y runs 10× faster: a reference of the wrong mode would show
VARIANTS = {"kernel": 1.0, "onload": 1.25}
RUNS = 8


def _write(path, *, skip=()):
    """The runs as CSV (values written exactly), and {(n, mode, variant): (tput, lat)}."""
    rng = np.random.default_rng(7)
    samples = {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "n", "mode", "host", "tput", "lat_ms"])
        for mode, scale in MODES.items():
            for n in NS:
                for variant, factor in VARIANTS.items():
                    if (n, mode) in skip:
                        continue
                    mean = 1000.0 * scale * factor * GAIN[n]
                    tput = rng.normal(mean, mean * 0.01, RUNS)
                    lat = rng.normal(4.0 / GAIN[n], 0.04 / GAIN[n], RUNS)
                    samples[(n, mode, variant)] = (tput, lat)
                    for t, lt in zip(tput, lat):
                        w.writerow([variant, n, mode, "h1", repr(float(t)), repr(float(lt))])
    return samples


def _import(db, path):
    r = perflab(
        "import",
        str(path),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--param",
        "n",
        "--param",
        "mode",
        "--param",
        "host",
        "--metric",
        "tput:higher",
        "--metric",
        "lat_ms:lower:ms",
        "--baseline",
        "kernel",
    )
    assert r.code == 0, r.err
    return r.out.strip().splitlines()[-1].split()[-1]  # "... compare with: perflab compare ID"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("across")
    samples = _write(tmp / "sweep.csv")
    db = tmp / "p.db"
    eid = _import(db, tmp / "sweep.csv")
    return str(db), eid, samples


def _json(db, eid, *extra):
    """The JSON of --across n=1, or of the --across in ``extra`` (the last one counts)."""
    r = perflab("compare", eid, "--store", db, "--across", "n=1", "--json", *extra)
    assert r.code == 0, r.err
    return json.loads(r.out)


def _cell(n, mode):
    return f"n={n},mode={mode},host=h1"


def test_intervals_contain_the_known_ratio_and_exclude_zero(sweep):
    db, eid, _ = sweep
    # Bonferroni: the 16 intervals cover the truth together (95%), not each on its own
    doc = _json(db, eid, "--correction", "bonferroni")
    assert doc["across"]["param"] == "n" and doc["across"]["value"] == "1"
    assert doc["across"]["reference"] == "n=1" and doc["experiment"]["baseline"] == "n=1"
    # matched: the reference of a cell is n=1 with the same mode (and host)
    assert doc["across"]["references"] == {
        _cell(n, mode): _cell(1, mode) for mode in MODES for n in (2, 4)
    }
    comps = doc["comparisons"]
    assert len(comps) == 2 * 2 * 2 * 2  # n ∈ {2, 4} × mode × variant × metric
    assert {c["variant"] for c in comps} == set(VARIANTS)
    assert "16 comparisons" in doc["correction_statement"]
    assert "over 16 comparisons" in _json(db, eid)["correction_statement"]  # Holm, the default
    for c in comps:
        n = int(c["labels"]["n"])
        truth = GAIN[n] - 1 if c["metric"] == "tput" else 1 / GAIN[n] - 1
        assert c["low"] <= truth <= c["high"], c
        assert c["significant"] and not (c["low"] <= 0 <= c["high"])
        assert c["verdict"] == "better"
    n4 = [c for c in comps if c["labels"]["n"] == "4" and c["metric"] == "tput"]
    assert len(n4) == 4 and all(c["estimate"] == pytest.approx(2.0, abs=0.05) for c in n4)
    # every cell's summaries, the references' included
    assert {(s["cell"], s["variant"]) for s in doc["summaries"]} == {
        (_cell(n, mode), v) for n in NS for mode in MODES for v in VARIANTS
    }


def test_the_same_numbers_as_comparing_by_hand(sweep):
    db, eid, samples = sweep
    for method in ("welch", "mannwhitney"):
        doc = _json(db, eid, "--method", method, "--correction", "none")
        impl = get_method(method)
        for c in doc["comparisons"]:
            n, mode = int(c["labels"]["n"]), c["labels"]["mode"]
            i = 0 if c["metric"] == "tput" else 1
            base = samples[(1, mode, c["variant"])][i]
            cand = samples[(n, mode, c["variant"])][i]
            want = impl.compare(base, cand, 0.95)
            for key in ("estimate", "low", "high", "p_value"):
                assert c[key] == pytest.approx(getattr(want, key), rel=1e-12, abs=1e-15), (
                    method,
                    key,
                )
            assert c["n_baseline"] == c["n_candidate"] == RUNS


def _summaries(samples, variant, i):
    """(reference key, its summary, the cell's summary) of every compared cell, by hand."""
    welch = get_method("welch")
    return [
        (
            mode,
            welch.summary(samples[(1, mode, variant)][i]),
            welch.summary(samples[(n, mode, variant)][i]),
        )
        for mode in MODES
        for n in (2, 4)
    ]


def test_geometric_mean_per_variant_across_the_sweep(sweep):
    db, eid, samples = sweep
    doc = _json(db, eid)
    sweeps = {(s["variant"], s["metric"]): s for s in doc["sweeps"]}
    assert set(sweeps) == {(v, m) for v in VARIANTS for m in ("tput", "lat_ms")}
    for (variant, metric), s in sweeps.items():
        i = 0 if metric == "tput" else 1
        cells = _summaries(samples, variant, i)
        want = shared_reference_summary(cells)
        assert s["cells"] == s["total_cells"] == 4 and s["label"] == "all 4 cells (geometric mean)"
        for key, value in (
            ("ratio", want.ratio),
            ("ratio_low", want.low),
            ("high", want.change_high),
        ):
            assert s[key] == pytest.approx(value, rel=1e-9), key
        # the plain geometric mean of the four ratios of means
        ratios = [c.mean / b.mean for _, b, c in cells]
        assert s["ratio"] == pytest.approx(math.prod(ratios) ** 0.25, rel=1e-12)
        truth = math.sqrt(GAIN[2] * GAIN[4])  # geometric mean of 2 and 3, per mode
        assert s["ratio"] == pytest.approx(truth if metric == "tput" else 1 / truth, rel=0.01)
        assert s["verdict"] == "better" and s["low"] * s["high"] > 0
        # wider than if the cells were independent: the two cells of a mode share n=1's runs
        alone = sweep_summary(
            [
                (samples[(1, mode, variant)][i], samples[(n, mode, variant)][i])
                for mode in MODES
                for n in (2, 4)
            ]
        )
        assert alone.ratio == pytest.approx(s["ratio"], rel=1e-12)
        assert s["ratio_high"] - s["ratio_low"] > alone.high - alone.low


def test_shared_reference_summary_is_the_sweep_summary_without_sharing_and_covers():
    rng = np.random.default_rng(5)
    welch = get_method("welch")
    pairs = [(rng.normal(100 * g, 3 * g, 6), rng.normal(150 * g, 2 * g, 5)) for g in (1, 2, 5)]
    want = sweep_summary(pairs)
    got = shared_reference_summary(
        [(str(j), welch.summary(a), welch.summary(b)) for j, (a, b) in enumerate(pairs)]
    )
    for key in ("ratio", "low", "high", "df", "q_statistic", "i_squared", "p_value"):
        assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-9), key
    # one reference shared by 5 cells (the memcached sweep against 1 instance), 5 runs each:
    # the 95% interval covers the true geometric mean in about 95% of 600 simulated sweeps
    gains = [2.0, 4.0, 8.0, 14.0, 28.0]
    truth = math.prod(gains) ** (1 / len(gains))
    hits = 0
    for _ in range(600):
        ref = welch.summary(rng.normal(1000, 30, 5))
        cells = [("1", ref, welch.summary(rng.normal(1000 * g, 30 * g, 5))) for g in gains]
        s = shared_reference_summary(cells)
        hits += s.low <= truth <= s.high
    assert 0.92 <= hits / 600 <= 0.98


def test_terminal_markdown_and_csv(sweep):
    db, eid, _ = sweep
    term = perflab("compare", eid, "--store", db, "--across", "n=1", "--no-summary")
    assert term.code == 0, term.err
    assert "each variant vs n=1" in term.out
    assert "across n: each cell against the cell with n=1" in term.out
    assert term.out.count("all 4 cells") == 2  # a geometric mean per variant

    md = perflab("compare", eid, "--store", db, "--across", "n=1", "--format", "markdown")
    assert md.code == 0, md.err
    assert "each variant vs n=1" in md.out and "| n | mode | host | variant |" in md.out
    rows = [line for line in md.out.split("**Warnings**")[0].splitlines() if line.startswith("| ")]
    rows = rows[
        : rows.index(next(r for r in rows if r.startswith("| n | mode | host | variant | n |")))
    ]
    assert len(rows) == 1 + 8 + 2  # header, cells × variants, a geometric mean per variant
    assert not [r for r in rows[1:] if r.startswith("| 1 |")]  # no row for the reference

    out = perflab("compare", eid, "--store", db, "--across", "n=1", "--format", "csv").out
    table = list(csv.DictReader(io.StringIO(out)))
    assert len(table) == 16 + 4
    assert {r["baseline"] for r in table} == {"n=1"}
    assert {r["n"] for r in table if r["method"] != "sweep"} == {"2", "4"}
    doc = _json(db, eid)
    first = doc["comparisons"][0]
    row = next(
        r
        for r in table
        if (r["cell"], r["variant"], r["metric"])
        == (first["cell"], first["variant"], first["metric"])
    )
    assert float(row["ci_low_pct"]) == pytest.approx(first["low"] * 100)


def test_a_value_is_matched_as_a_number_and_another_reference_works(sweep):
    db, eid, _ = sweep
    doc = _json(db, eid, "--across", "n=4.0", "--correction", "bonferroni")
    assert doc["across"]["reference"] == "n=4"
    tput = [c for c in doc["comparisons"] if c["metric"] == "tput" and c["labels"]["n"] == "1"]
    assert all(c["low"] <= 1 / 3 - 1 <= c["high"] and c["verdict"] == "worse" for c in tput)
    by_mode = _json(db, eid, "--across", "mode=x", "--correction", "bonferroni")
    y = [c for c in by_mode["comparisons"] if c["metric"] == "tput"]
    assert len(y) == 3 * 2 and all(c["low"] <= 9 <= c["high"] for c in y)  # ×10


def test_cells_without_a_reference_are_left_out_with_a_note(tmp_path):
    _write(tmp_path / "sparse.csv", skip={(1, "y")})
    eid = _import(tmp_path / "s.db", tmp_path / "sparse.csv")
    doc = _json(str(tmp_path / "s.db"), eid)
    assert {c["labels"]["mode"] for c in doc["comparisons"]} == {"x"}
    note = next(w for w in doc["warnings"] if w["code"] == "across_no_reference")
    assert _cell(2, "y") in note["message"] and _cell(4, "y") in note["message"]


def test_report_across_draws_every_cell_and_says_how_to_get_it_again(sweep, tmp_path):
    """`perflab report ID --across n=1`: the comparison of `compare --across` (the same rows,
    numbers and `across` fields), the plots of runs over the experiment's own cells (the
    references' runs too, by their own cell and variant), and the commands that give it
    again with --across; an HTML page and a Markdown post with their plots."""
    db, eid, samples = sweep
    r = perflab("report", eid, "--store", db, "--across", "n=1", "--json")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    compared = _json(db, eid)
    doc = report["comparison"]
    assert doc["across"] == compared["across"]
    key = ("cell", "variant", "metric")
    rows = {
        tuple(c[k] for k in key): (c["low"], c["high"], c["p_value"]) for c in doc["comparisons"]
    }
    assert rows == {
        tuple(c[k] for k in key): (c["low"], c["high"], c["p_value"])
        for c in compared["comparisons"]
    }
    assert len(rows) == 2 * 2 * 2 * 2  # n=2, 4 × modes × variants × metrics
    # every run is drawn under its own cell and variant, the reference cells' included
    drawn: dict[tuple[str, str], list[float]] = {}
    for run in report["runs"]:
        drawn.setdefault((run["cell"], run["variant"]), []).append(run["values"]["tput"])
    assert {k: sorted(v) for k, v in drawn.items()} == {
        (_cell(n, mode), v): sorted(float(x) for x in t) for (n, mode, v), (t, _) in samples.items()
    }
    commands = [c["command"] for c in report["reproduce"]]
    assert any(c.startswith(f"perflab report {eid} --across n=1") for c in commands), commands
    assert any(c.startswith(f"perflab compare {eid} --across n=1") for c in commands), commands
    for name in ("r.html", "r.md"):
        out = perflab("report", eid, "--store", db, "--across", "n=1", "-o", str(tmp_path / name))
        assert out.code == 0, out.err
    html = (tmp_path / "r.html").read_text()
    assert "each cell against the cell with n=1" in html and "--across n=1" in html
    assert (tmp_path / "r_files").is_dir() and any((tmp_path / "r_files").iterdir())


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--across", "size=1"], "no matrix parameter 'size' (parameters: n, mode, host)"),
        (["--across", "n=3"], "n has no value '3' (values: 1, 2, 4)"),
        (["--across", "host=h1"], "host has one value only"),
        (["--across", "n"], "write PARAM=VALUE"),
        (["--across", "n=1", "--scaling", "n"], "--across and --scaling"),
        (["1", "--across", "n=1"], "drop the second experiment"),
    ],
)
@pytest.mark.parametrize("command", ["compare", "report"])
def test_errors_are_one_line(sweep, extra, words, command, tmp_path):
    db, eid, _ = sweep
    out = tmp_path / "report.html"
    more = ["-o", str(out)] if command == "report" else []
    r = perflab(command, eid, *extra, "--store", db, *more)
    assert r.code == 2
    assert r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], r.err
    assert not out.exists()  # nothing written
