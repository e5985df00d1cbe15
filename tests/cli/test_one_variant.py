"""A measurement without a comparison: an experiment of one variant (a nightly CI job, a
point of a series) runs, is stored, shown, summarised, reported and compared with
another experiment — never refused for having nothing to compare inside it."""

from __future__ import annotations

import json

from cli_helpers import perflab, write_spec

SPEC = """\
name = "nightly"
baseline = "main"
repetitions = 4

[[variant]]
name = "main"

[[phase]]
name = "work"
command = "echo {value}"

[[metric]]
name = "t"
regex = '([0-9.]+)'
unit = "ms"
better = "lower"
"""


def test_one_variant_runs_and_shows_its_summaries(tmp_path):
    spec = write_spec(tmp_path, SPEC.format(value=100))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 0, r.err
    assert "one variant (main): nothing to compare inside experiment 1" in r.out
    assert "perflab compare 1 OTHER" in r.out
    assert "t (ms) — lower is better" in r.out and "TLDR" not in r.out
    for fmt, says in (("markdown", "one variant (main)"), ("csv", "cell,variant,baseline")):
        shown = perflab("compare", "1", "--store", str(db), "--format", fmt)
        assert shown.code == 0 and says in shown.out, shown.err
    doc = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    assert doc["comparisons"] == [] and doc["summaries"][0]["n"] == 4
    html = tmp_path / "r.html"
    made = perflab("report", "1", "--store", str(db), "-o", str(html))
    assert made.code == 0, made.err
    text = html.read_text()
    assert "nothing to compare inside experiment 1" in text
    assert "Relative change per metric" not in text  # no change to plot


def test_two_one_variant_experiments_compare_and_make_a_history(tmp_path):
    db = tmp_path / "p.db"
    for value, version in ((100, "v1"), (120, "v2")):
        spec = write_spec(tmp_path, SPEC.format(value=value))
        r = perflab("run", str(spec), "--store", str(db), "--new", "--version", version)
        assert r.code == 0, r.err
    both = perflab("compare", "1", "2", "--store", str(db), "--json")
    assert both.code == 0, both.err
    [row] = json.loads(both.out)["comparisons"]
    assert row["verdict"] == "worse" and row["estimate"] == 0.2  # 100 ms → 120 ms
    history = perflab("history", "nightly", "--store", str(db))
    assert history.code == 0, history.err
    assert "v1" in history.out and "v2" in history.out and "variant main" in history.out


def test_a_csv_of_one_version_imports(tmp_path):
    csv = tmp_path / "night.csv"
    csv.write_text("variant,t\nmain,10\nmain,11\nmain,10.5\n")
    db = tmp_path / "p.db"
    r = perflab(
        "import", str(csv), "--variant", "variant", "--metric", "t:lower:ms",
        "--baseline", "main", "--store", str(db),
    )  # fmt: skip
    assert r.code == 0, r.err
    shown = perflab("compare", r.out.strip(), "--store", str(db))
    assert shown.code == 0 and "one variant (main)" in shown.out, shown.err
