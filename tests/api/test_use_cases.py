"""The use-case layer (`perflab.api`) is the one path from a question to its answer: the
command line and the Python API give the same numbers for a comparison across cells and
a scaling fit, and an output format added from outside perflab (here, from this test
module) is found by name by `perflab compare`, `perflab report` and `perflab run
--export` without a change to perflab's code."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import perflab as api
import pytest
from cli_helpers import import_mglru, perflab
from perflab.report import formats


def test_across_cells_from_python_is_the_command_lines(tmp_path):
    db = import_mglru(tmp_path / "p.db")
    r = perflab("compare", "1", "--store", str(db), "--across", "ram_utilization_pct=90", "--json")
    assert r.code == 0, r.err
    table = json.loads(r.out)["comparisons"]
    rows = api.open(db).compare(1, across="ram_utilization_pct=90").rows
    assert rows, "the across comparison compares something"
    got = {(x.variant, x.cell, x.metric.name): round(x.estimate, 12) for x in rows}
    want = {
        (c["variant"], c["cell"], c["metric"]): round(c["estimate"], 12)
        for c in table
        if c.get("estimate") is not None
    }
    assert got == want


def _sizes_csv(path: Path) -> Path:
    """Runs of two variants at four sizes: cost 5 + 2·n (a) and 5 + 3·n (b), ±1% noise."""
    rng = random.Random(7)
    lines = ["variant,n,run,cost_us"]
    for variant, slope in (("a", 2.0), ("b", 3.0)):
        for n in (100, 1000, 10000, 100000):
            for rep in range(5):
                lines.append(f"{variant},{n},{rep},{(5 + slope * n) * rng.gauss(1, 0.01):.4f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_scaling_fit_from_python_is_the_command_lines(tmp_path):
    db = tmp_path / "s.db"
    csv = _sizes_csv(tmp_path / "sizes.csv")
    r = perflab(
        "import", str(csv), "--store", str(db), "--variant", "variant", "--param", "n",
        "--metric", "cost_us:lower:us", "--baseline", "a",
    )  # fmt: skip
    assert r.code == 0, r.err
    r = perflab("compare", "1", "--store", str(db), "--scaling", "n", "--exponent", "1", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    fits = api.open(db).scaling(1, "n", exponent=1).fits
    slopes = {f.variant: f.fit.b.value for g in fits.groups for f in g.fits}
    want = {f["variant"]: f["b"]["value"] for g in doc["groups"] for f in g["fits"]}
    assert slopes == pytest.approx(want, rel=1e-12)
    assert slopes["b"] / slopes["a"] == pytest.approx(1.5, rel=0.05)


class _Tsv:
    """A comparison as tab-separated values: the test's own format."""

    suffixes = (".tsv",)

    def load(self) -> None:
        pass

    def comparison(self, found, view):
        rows = ["cell\tvariant\tmetric\testimate"]
        for c in found.rows:
            if math.isfinite(c.estimate):
                rows.append(f"{c.cell}\t{c.variant}\t{c.metric.name}\t{c.estimate:.6f}")
        return "\n".join(rows) + "\n"

    def scaling(self, fits, view):
        return "".join(f"{f.variant}\t{f.fit.b.value:.6g}\n" for g in fits.groups for f in g.fits)


class _Title:
    """A report as its title and verdict in plain text."""

    suffixes = (".txt",)

    def write(self, report, path, image_format):
        path.write_text(self.text(report))
        return [path]

    def text(self, report):
        return report.title + "\n" + "\n".join(str(p) for p in report.verdict) + "\n"


@pytest.fixture
def own_formats():
    formats.register_comparison_format("tsv", _Tsv())
    formats.register_report_format("title", _Title())
    yield
    formats.COMPARISON.unregister("tsv")
    formats.REPORT.unregister("title")


def test_a_format_added_from_outside_is_found_by_name(tmp_path, own_formats):
    db = import_mglru(tmp_path / "p.db")
    r = perflab("compare", "1", "--store", str(db), "--format", "tsv")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "cell\tvariant\tmetric\testimate"
    # the 110% cell: MGLRU's throughput up by 12-16% (the seed's TLDR)
    (ops,) = [x for x in lines if x.startswith("ram_utilization_pct=110\tmglru\tops_per_sec")]
    assert 0.12 < float(ops.split("\t")[3]) < 0.16

    r = perflab("report", "1", "--store", str(db), "--format", "title", "-o", "-")
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == "mglru-memcached-runs"
    out = tmp_path / "r.txt"
    r = perflab("report", "1", "--store", str(db), "-o", str(out))
    assert r.code == 0, r.err
    assert out.read_text().startswith("mglru-memcached-runs\n")


RUN_SPEC = """\
name = "tiny"
baseline = "a"
repetitions = 3
[[variant]]
name = "a"
env = { V = "10" }
[[variant]]
name = "b"
env = { V = "20" }
[[phase]]
name = "p"
command = "echo v=$V"
[[metric]]
name = "v"
better = "lower"
regex = 'v=(?P<value>[0-9]+)'
"""


def test_run_exports_in_a_format_added_from_outside(tmp_path, own_formats):
    spec = tmp_path / "spec.toml"
    spec.write_text(RUN_SPEC)
    out = tmp_path / "live.tsv"
    r = perflab("run", str(spec), "--store", str(tmp_path / "r.db"), "--export", str(out))
    assert r.code == 0, r.err
    assert out.read_text().splitlines()[1] == "-\tb\tv\t1.000000"  # b's 20 is a's 10 + 100%


def test_an_unknown_format_is_refused_by_name(tmp_path):
    db = import_mglru(tmp_path / "p.db")
    r = perflab("report", "1", "--store", str(db), "-o", str(tmp_path / "r.tsv"))
    assert r.code == 2
    assert "cannot tell the report format from 'r.tsv'" in r.err
