"""The report model and writers without a browser: the MGLRU memcached experiment's published
data as a report (verdict in words, TLDR, sections in the issue's order), an experiment without
a matrix, Markdown escaping rules, plot rendering, and the command's one-line errors."""

from __future__ import annotations

import json
import re

import pytest
from cli_helpers import perflab, write_spec
from perflab.analysis.request import ComparisonRequest
from perflab.api.reporting import build_report
from perflab.report import plots
from perflab.report.html import render_html
from perflab.report.markdown import _guard_start, md_escape
from perflab.store import Database
from testdata import MGLRU_RUNS, mglru_import

IMPORT = mglru_import("ops_per_sec:higher:ops/s", "p99_latency_ms:lower:ms")


@pytest.fixture(scope="module")
def mglru(tmp_path_factory):
    db = tmp_path_factory.mktemp("mglru") / "p.db"
    r = perflab("import", str(MGLRU_RUNS), "--store", str(db), *IMPORT)
    assert r.code == 0, r.err
    return db


def test_mglru_report_says_what_the_experiment_says(mglru):
    with Database(mglru) as s:
        rep = build_report(s, ComparisonRequest(1))
    verdict = "".join(sp.text for sp in rep.verdict[0].spans)
    assert verdict.startswith(
        "mglru vs baseline (10 runs per variant and cell, 95% confidence intervals, auto: Welch, runs clean): "
        "better in 2 of 4 comparisons and no significant change in 2."
    )
    assert (
        "ops_per_sec (higher is better): better +[12.2, 16.2]%† at ram_utilization_pct=110; "
        "no significant change at ram_utilization_pct=90." in verdict
    )
    assert (
        "p99_latency_ms (lower is better): better -[20.0, 23.0]% at ram_utilization_pct=110"
        in verdict
    )
    assert [s.id for s in rep.sections] == [
        "verdict",
        "tldr",
        "change",
        "distributions",
        "order",
        "scaling",
        "warnings",
        "spec",
        "reproduce",
    ]  # no histograms, env or output
    tldr = rep.sections[1].blocks[0]
    assert [[c.text for c in row] for row in tldr.rows] == [
        ["90", "NS", "NS"],
        ["110", "+[12.2, 16.2]%†", "-[20.0, 23.0]%"],
    ]
    assert rep.runs.numeric_params == {"ram_utilization_pct": {"90": 90.0, "110": 110.0}}
    assert len(rep.plots()) == 2 * 4
    assert rep.colors == {"baseline": "#0072B2", "mglru": "#E69F00"}


def test_mglru_html_tables_and_reproduction(mglru, tmp_path):
    out = perflab("report", "1", "--store", str(mglru), "-o", "-")
    assert out.code == 0, out.err
    html = out.out
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    tldr = re.search(r'<table class="tldr".*?</table>', html, re.S).group(0)
    body, footer = tldr.split(
        "<tfoot>"
    )  # the footer: the sweep's geometric mean (test_sweep_compare.py)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", body)
    assert cells == [
        "90",
        "NS",
        "NS",
        "110",
        '+[12.2, 16.2]%†<span class="word">better</span>',
        '-[20.0, 23.0]%<span class="word">better</span>',
    ]
    assert re.findall(r"<td[^>]*>(.*?)</td>", footer)[0] == "all 2 cells (geometric mean)"
    assert 'class="better"' in tldr.replace("num better", "better")
    assert "was imported from" in html and "mglru-memcached-runs.csv" in html
    assert f"perflab compare 1 --store {mglru}" in html
    assert html.count("data:image/svg+xml;base64,") == 8
    # Nothing is fetched from anywhere: no external URL in any src/href.
    assert not re.search(r'(src|href)="(?!data:|#)', html)


def test_report_without_matrix_and_with_threshold(tmp_path):
    spec = write_spec(
        tmp_path,
        """\
name = "flat"
baseline = "a"
repetitions = 5
[[variant]]
name = "a"
params = { v = 100 }
[[variant]]
name = "b"
params = { v = 150 }
[[phase]]
name = "p"
command = "echo v=$(( {v} + {repetition} ))"
[[metric]]
name = "v"
unit = "ops/s"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
""",
    )
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code == 0
    r = perflab(
        "report", "1", "--store", str(db), "--json", "--threshold", "1%", "--confidence", "0.99"
    )
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["comparison"]["confidence"] == 0.99 and doc["comparison"]["threshold"] == 0.01
    assert doc["numeric_params"] == {}
    assert [s["id"] for s in doc["sections"]][:5] == [
        "verdict",
        "tldr",
        "change",
        "distributions",
        "order",
    ]
    assert "scaling" not in [s["id"] for s in doc["sections"]]
    assert doc["verdict"][0].startswith(
        "b vs a (5 runs per variant and cell, 99% confidence intervals"
    )
    assert "v (higher is better): better +[" in doc["verdict"][0]
    compare = next(
        x["command"] for x in doc["reproduce"] if x["command"].startswith("perflab compare")
    )
    assert compare == f"perflab compare 1 --confidence 0.99 --threshold 1% --store {db}"
    c = doc["comparison"]["comparisons"][0]
    assert c["estimate"] == pytest.approx(50 / 103)
    # The plots of a matrix-less experiment draw (one panel, no cell title).
    with Database(db) as s:
        rep = build_report(s, ComparisonRequest(1))
    for p in rep.plots():
        svg = plots.render(p.make, "svg")
        assert svg.startswith(b"<?xml") and b"<svg" in svg and b"<script" not in svg
    png = plots.render(rep.plots()[0].make, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "flat" in render_html(rep)


@pytest.mark.parametrize(
    "text, want",
    [
        ("ops_per_sec", "ops_per_sec"),
        ("+[12.3, 16.1]%", "+[12.3, 16.1]%"),
        ("-[20.0, 23.0]%", "-[20.0, 23.0]%"),
        ("<script>x</script>", "\\<script\\>x\\</script\\>"),
        ("[link](javascript:x)", "\\[link\\](javascript:x)"),
        ("a | b", "a \\| b"),
        ("_leading", "\\_leading"),
        ("*star* `tick`", "\\*star\\* \\`tick\\`"),
        ("&lt;", "&amp;lt;"),
        ("AT&T", "AT&T"),
    ],
)
def test_md_escape(text, want):
    assert md_escape(text) == want


@pytest.mark.parametrize(
    "text, want",
    [
        ("# x", "\\# x"),
        ("- x", "\\- x"),
        ("1. x", "1\\. x"),
        ("42 runs", "42 runs"),
        ("-[1, 2]%", "-[1, 2]%"),
    ],
)
def test_paragraph_cannot_start_a_block(text, want):
    assert _guard_start(text) == want


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-o", "report.txt"], "cannot tell the report format from 'report.txt'"),
        (["-o", "-", "--format", "markdown"], "a Markdown report needs a file name"),
        (["-o", "r.md", "--screenshot", "x.png"], "--screenshot loads the HTML report"),
        (["-o", "-", "--screenshot", "x.png"], "--screenshot needs the HTML report in a file"),
        (["-o", "r.html", "--screenshot-section", "profiles"], "names the part of --screenshot"),
        (["--confidence", "2"], "--confidence must be between 0.5 and 1"),
        (["--method", "nope"], "unknown statistical method 'nope'"),
    ],
)
def test_bad_report_arguments(mglru, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    r = perflab("report", "1", "--store", str(mglru), *argv)
    assert r.code == 2, (r.out, r.err)
    assert r.err.startswith("perflab: error: ") and message in r.err and r.err.count("\n") == 1, (
        r.err
    )
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_default_output_name(mglru, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = perflab("report", "1", "--store", str(mglru))
    assert r.code == 0, r.err
    assert r.out.strip() == "wrote report-1.html (8 plots)"
    assert (tmp_path / "report-1.html").read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report-1.html"]  # no temporary file left


def test_matrix_values_with_suffixes_give_the_params_plot(tmp_path):
    """Reported: the report re-parsed the spec and read the label "1K" as no number, so the
    plot against the parameter went missing. Values come from the typed spec now."""
    spec = write_spec(
        tmp_path,
        """\
name = "sizes"
baseline = "a"
repetitions = 3
[matrix]
keys = ["1K", "4K"]
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
command = "echo keys={keys} v=$(( 10 + {repetition} ))"
[[phase]]
name = "populate"
command = "echo v=999"
measure = false
[[metric]]
name = "v"
better = "higher"
phase = "p"
regex = 'v=(?P<value>[0-9]+)'
""",
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    doc = json.loads(perflab("report", "1", "--store", str(db), "--json").out)
    assert doc["numeric_params"] == {"keys": {"1K": 1000.0, "4K": 4000.0}}
    with Database(db) as s:
        assert s.experiment(1).settings["unmeasured_phases"] == ["populate"]
