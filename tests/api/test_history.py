"""`perflab history`: a series built for real — a small C program in a git repository,
one commit and tag per version, whose work doubles at v1.11 — measured with `perflab
run --version` (and once with the spec's own `version = { command = "git describe" }`),
two older versions measured in another store and imported from CSV with `--version`.
The history orders the versions naturally (v1.9 < v1.10), summarises each version's runs,
finds the planted change where it was planted with the right sign, fits 80 columns, and
its HTML page loads cleanly in headless Chromium.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_helpers import REPO, perflab, write_spec
from rich.cells import cell_len

#: (version, the loop's work in percent): the work doubles at v1.11. v1.6 and v1.7 are
#: measured in another store and imported. (A shared VM's speed shifts from one version's
#: runs to the next: by up to 17% between versions of the same code, measured in one run
#: of this file, where the loop's CPU time varies by 8% from run to run; so the planted
#: change is large and the threshold for "nothing else" is 30%.)
VERSIONS = [
    ("v1.6", 100),
    ("v1.7", 100),
    ("v1.8", 100),
    ("v1.9", 100),
    ("v1.10", 100),
    ("v1.11", 200),
    ("v1.12", 200),
    ("v2.0", 200),
]
IMPORTED = ("v1.6", "v1.7")
BY_DESCRIBE = "v2.0"  # its version from the spec's `git describe`, not --version
ORDER = [v for v, _ in VERSIONS]

PROGRAM = """\
#include <stdio.h>
#include <stdlib.h>
#define WORK {work}
int main(int argc, char **argv) {{
    long n = atol(argv[1]) * WORK / 100;
    volatile unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    printf("%lu\\n", (unsigned long)x);
    return 0;
}}
"""

SPEC = """\
name = "loop"
description = "a loop whose work doubles at v1.11"
baseline = "small"
repetitions = 5
warmup = 1
version = { command = "git describe --tags", timeout = "10s" }
source = { repo = "." }

[[variant]]
name = "small"
params = { n = 8000000 }
[[variant]]
name = "large"
params = { n = 16000000 }

[[phase]]
name = "loop"
command = "./loop {n}"

[[metric]]
name = "cpu_time"
harness = "cpu_time"
unit = "s"
better = "lower"
[[metric]]
name = "wall_time"
harness = "wall_time"
unit = "s"
better = "lower"
"""


def git(repo: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _import_from(lab: Path, eid: str, db: Path, version: str, commit: str, repo: Path) -> None:
    """Experiment ``eid`` of the store ``lab`` exported, pivoted to a CSV of one row per run
    (as results made elsewhere come), and imported into ``db`` as ``version``."""
    r = perflab("export", eid, "--store", str(lab))
    assert r.code == 0, r.err
    runs: dict[str, dict[str, str]] = {}
    for row in csv.DictReader(io.StringIO(r.out)):
        if row["warmup"] == "False" and row["status"] == "ok":
            runs.setdefault(row["run_id"], {"variant": row["variant"]})[row["metric"]] = row[
                "value"
            ]
    path = lab.parent / f"{version}.csv"
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, ["variant", "cpu_time", "wall_time"])
        out.writeheader()
        out.writerows(runs.values())
    r = perflab(
        "import", str(path), "--store", str(db), "--name", "loop", "--variant", "variant",
        "--metric", "cpu_time:lower:s", "--metric", "wall_time:lower:s", "--baseline", "small",
        "--version", version, "--commit", commit, "--repo", str(repo),
    )  # fmt: skip
    assert r.code == 0, r.err


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """(folder, store, {version: commit}): the series measured and imported, once."""
    d = tmp_path_factory.mktemp("history")
    repo, db, lab = d / "src", d / "p.db", d / "lab.db"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("loop\nspec.toml\n")
    spec = write_spec(repo, SPEC)
    commits = {}
    for version, work in VERSIONS:
        (repo / "loop.c").write_text(PROGRAM.format(work=work))
        git(repo, "add", "loop.c", ".gitignore")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"release {version}")
        git(repo, "tag", version)
        commits[version] = git(repo, "rev-parse", "HEAD")
        subprocess.run(["gcc", "-O1", "-o", "loop", "loop.c"], cwd=repo, check=True)
        store = lab if version in IMPORTED else db
        given = [] if version == BY_DESCRIBE else ["--version", version]
        r = perflab("run", str(spec), "--store", str(store), "--no-compare", *given)
        assert r.code == 0, r.err
    for k, version in enumerate(IMPORTED):
        _import_from(lab, str(k + 1), db, version, commits[version], repo)
    return d, db, commits


def history(db: Path, *argv: str) -> str:
    r = perflab("history", "loop", "--store", str(db), *argv)
    assert r.code == 0, r.err
    return r.out


def test_the_json_history_orders_versions_and_finds_the_planted_change(series):
    _, db, commits = series
    doc = json.loads(history(db, "--format", "json"))
    assert doc["schema"] == "perflab.history/1"
    assert {"perflab_version", "name", "confidence", "change_confidence", "min_effect"} <= set(doc)
    assert (doc["name"], doc["confidence"], doc["change_confidence"]) == ("loop", 0.95, 0.99)
    assert [v["label"] for v in doc["versions"]] == ORDER  # natural order: v1.9 < v1.10
    assert [v["version"] for v in doc["versions"]] == ORDER
    assert {v["label"]: v["commit"] for v in doc["versions"]} == commits
    assert all(v["repo"] == str(series[0] / "src") for v in doc["versions"])
    assert doc["warnings"] == []
    keys = {(s["metric"]["name"], s["cell"], s["variant"]) for s in doc["series"]}
    assert keys == {(m, "-", v) for m in ("cpu_time", "wall_time") for v in ("small", "large")}
    for s in doc["series"]:
        assert [p["version"] for p in s["points"]] == ORDER
        for p in s["points"]:
            assert p["n"] == 5 and p["low"] < p["mean"] < p["high"]
        assert s["changes"]["method"] and s["changes"]["confidence"] == 0.99
        if s["metric"]["name"] != "cpu_time":
            continue
        planted = [c for c in s["change_points"] if (c["before"], c["after"]) == ("v1.10", "v1.11")]
        assert len(planted) == 1, s["change_points"]
        c = planted[0]
        # twice the work in the loop: cpu_time doubles, nearly (process start-up does not)
        assert c["scale"] == "ratio" and 0.6 < c["low"] <= c["estimate"] <= c["high"] < 1.5
        assert c["verdict"] == "worse" and c["p_detection"] <= 0.01 and c["p_value"] <= 0.01
        assert c["detail"]["index"] == ORDER.index("v1.11")
        # nothing else of that size: the versions of one level measure alike
        others = [x for x in s["change_points"] if x is not c]
        assert all(abs(x["estimate"]) < 0.3 for x in others), others


def test_the_table_has_a_row_per_version_and_fits_80_columns(series, monkeypatch):
    _, db, commits = series
    # the versions are measured minutes apart on a shared machine, whose speed drifts
    # between them: only changes beyond ±30% count here (the planted one is +100%)
    md = history(
        db, "--format", "markdown", "--metric", "cpu_time", "--variant", "large",
        "--min-effect", "30",
    )  # fmt: skip
    rows = [line.split(" | ") for line in md.splitlines() if line.startswith(("| v1", "| v2"))]
    assert [r[0].removeprefix("| ") for r in rows] == ORDER
    assert [r[1] for r in rows] == [commits[v][:10] for v in ORDER]
    assert {r[2] for r in rows} == {"5"}
    assert md.count("❌") == 1 and "❌" in rows[ORDER.index("v1.11")][-1]
    assert "- **cpu_time: between v1.10 and v1.11: +" in md and "worse (p = " in md

    monkeypatch.setenv("COLUMNS", "80")
    text = history(db)
    lines = text.splitlines()
    assert lines[0].startswith("loop — history (8 versions, experiments #")
    assert max(cell_len(line) for line in lines) <= 80
    assert "wall_time (ms) ↓" in text or "wall_time (ms)" in text
    for variant in ("small", "large"):
        section = text.split(f"variant {variant}")[1]
        versions = [v for v in ORDER if f"│ {v} " in section.split("variant ")[0]]
        assert versions == ORDER, section
    assert text.count("cpu_time: between v1.10 and v1.11: +") == 2  # both variants


def test_show_and_ls_say_the_version_and_commit(series):
    _, db, commits = series
    listed = json.loads(perflab("ls", "--json", "--store", str(db)).out)
    assert {e["version"] for e in listed} == set(ORDER)
    assert {e["version"]: e["source_commit"] for e in listed} == commits
    shown = perflab("show", "loop", "--store", str(db))
    assert shown.code == 0 and f"version    v1.7 (commit {commits['v1.7']} of " in shown.out
    doc = json.loads(perflab("show", "loop", "--store", str(db), "--json").out)
    assert (doc["version"], doc["source_commit"]) == ("v1.7", commits["v1.7"])
    table = perflab("ls", "--store", str(db)).out
    assert "version" in table.splitlines()[1] and "v1.10" in table


def test_experiments_and_filters(series):
    _, db, _ = series
    ids = {
        e["version"]: e["id"] for e in json.loads(perflab("ls", "--json", "--store", str(db)).out)
    }
    picked = ",".join(str(ids[v]) for v in ("v2.0", "v1.9", "v1.10"))
    r = perflab("history", "--experiments", picked, "--store", str(db), "--format", "json",
                "--metric", "cpu_time", "--variant", "small", "--confidence", "0.9")  # fmt: skip
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [v["label"] for v in doc["versions"]] == ["v1.9", "v1.10", "v2.0"]
    assert [(s["metric"]["name"], s["variant"]) for s in doc["series"]] == [("cpu_time", "small")]
    assert doc["confidence"] == doc["change_confidence"] == 0.9

    import perflab as api  # the Python API: the same history, to the last digit

    found = api.open(db).history("loop", metrics=["cpu_time"], variant="small")
    (s,) = json.loads(history(db, "--format", "json", "--metric", "cpu_time", "--variant",
                              "small"))["series"]  # fmt: skip
    assert [c.point.estimate for c in found.series[0].found] == [
        c["estimate"] for c in s["change_points"]
    ]
    assert [p.mean for p in found.series[0].points] == [p["mean"] for p in s["points"]]


@pytest.mark.browser
def test_the_html_history_loads_cleanly_in_chromium(series):
    from matplotlib import image as mpimg
    from perflab.report.browser import Browser, find_chromium

    d, db, _ = series
    assert find_chromium(), "chromium is not installed: run scripts/setup"
    html = d / "history.html"
    shot = REPO / "out" / "ci" / "history-screenshot.png"
    r = perflab("history", "loop", "--store", str(db), "-o", str(html), "--screenshot", str(shot))
    assert r.code == 0, r.err
    assert f"wrote {html}" in r.out and shot.stat().st_size > 10_000
    with Browser(width=1280, height=900) as b:
        page = b.open(html)
        assert page.clean, page
        assert all(u.startswith(("file:", "data:")) for u in page.requests), page.requests
        assert b.evaluate("document.scripts.length") == 0
        figs = b.evaluate("""Array.from(document.querySelectorAll('figure.plot img'),
            i => ({ok: i.complete && i.naturalWidth > 300 && i.naturalHeight > 150, alt: i.alt}))""")
        assert len(figs) == 2 and all(f["ok"] for f in figs), figs  # cpu_time, wall_time
        rows = b.evaluate("""Array.from(document.querySelectorAll('table.history'),
            t => Array.from(t.querySelectorAll('tbody tr'), tr => tr.children[0].textContent))""")
        assert rows == [ORDER, ORDER]
        worse = b.evaluate(
            "Array.from(document.querySelectorAll('td.worse'), td => td.textContent)"
        )
        assert len(worse) >= 2 and all(w.endswith("worse") for w in worse)
        text = b.evaluate("document.body.innerText")
        assert "cpu_time: between v1.10 and v1.11: +" in text
        png = b.screenshot()
    img = mpimg.imread(io.BytesIO(png), format="png")
    assert (img[..., :3].min(axis=-1) < 0.8).mean() > 0.01  # something is drawn


def test_bad_input_is_one_line(series, tmp_path):
    _, db, _ = series
    cases = [
        (["history", "nope"], "no experiment named 'nope' in"),
        (["history", "loop", "--metric", "ops"],
         "no metric 'ops' in the experiments of loop (metrics: cpu_time, wall_time)"),
        (["history", "loop", "--variant", "huge"], "no variant 'huge' in the experiments of loop"),
        (["history", "loop", "--cell", "n=3"], "no cell 'n=3' in the experiments of loop (cells: -)"),
        (["history"], "name the series (perflab history NAME), or give --experiments IDS"),
        (["history", "loop", "--experiments", "1"], "give NAME or --experiments, not both"),
        (["history", "loop", "--confidence", "2"], "--confidence must be between 0.5 and 1"),
        (["history", "loop", "--format", "terminal", "-o", str(tmp_path / "h.txt")],
         "the terminal view prints"),
        (["history", "loop", "-o", str(tmp_path / "h.txt")], "cannot tell the history format"),
    ]  # fmt: skip
    for argv, said in cases:
        r = perflab(*argv, "--store", str(db))
        assert r.code == 2 and r.out == "", (argv, r)
        assert r.err.count("\n") == 1 and said in r.err, (argv, r.err)


SMALL = """\
name = "tiny"
baseline = "a"
repetitions = 1
{extra}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
command = "true"
[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
"""


def test_a_version_the_spec_cannot_give_is_one_line_at_its_line(tmp_path):
    db = tmp_path / "p.db"
    cases = [
        ('version = { command = "exit 3" }', ":4: version command 'exit 3' exited with status 3"),
        ('version = { command = "true" }', ":4: version command 'true' printed nothing"),
        ('version = { command = "sleep 5", timeout = "0.2s" }', "did not finish within 0.2 s"),
        ("version = { command = \"printf 'a\\\\nb'\" }", "one line of printable text"),
        ('source = { repo = "." }', ":4: source.repo '.': not a git repository with a commit"),
        ('source = { repo = "missing" }', ":4: source.repo 'missing': no such folder"),
        ('version = ""', ":4: version: the version is empty"),
        ("version = 3", ":4: version: expected a string or a table, got 3"),
        ('source = { rpo = "." }', ":4: missing required key 'repo' in [source]"),
    ]
    for extra, said in cases:
        spec = write_spec(tmp_path, SMALL.format(extra=extra))
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
        assert r.code == 2 and r.err.count("\n") == 1 and said in r.err, (extra, r.err)
    assert not db.exists()  # nothing ran, nothing was stored
    spec = write_spec(tmp_path, SMALL.format(extra='version = { command = "exit 1" }'))
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--version", "v9")
    assert r.code == 0, r.err  # --version given: the spec's command is not run
    r = perflab("run", "--resume", "1", "--store", str(db), "--version", "v9")
    assert r.code == 2 and "--version names the version of a new experiment" in r.err
    r = perflab("run", str(spec), "--store", str(db), "--version", " ")
    assert r.code == 2 and "--version ' ': the version is empty" in r.err
    r = perflab("--version")  # perflab's own, before the command, as ever
    assert r.code == 0 and r.out.startswith("perflab ")
    csv_file = tmp_path / "r.csv"
    csv_file.write_text("v,t\na,1\nb,2\n")
    r = perflab("import", str(csv_file), "--store", str(db), "--variant", "v", "--metric",
                "t:lower", "--baseline", "a", "--repo", str(tmp_path))  # fmt: skip
    assert r.code == 2 and r.err.count("\n") == 1
    assert f"--repo {tmp_path}: not a git repository with a commit" in r.err


def test_unversioned_experiments_come_last_after_a_warning(tmp_path):
    db = tmp_path / "p.db"
    spec = write_spec(tmp_path, SMALL.format(extra=""))
    for given in (["--version", "2.10"], [], ["--version", "2.9"]):
        r = perflab("run", str(spec), "--store", str(db), "--no-compare", *given)
        assert r.code == 0, r.err
    r = perflab("history", "tiny", "--store", str(db), "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [v["label"] for v in doc["versions"]] == ["2.9", "2.10", "#2"]
    warning = doc["warnings"][0]  # (then: too few runs for an interval)
    assert warning["code"] == "no_version" and "#2" in warning["message"]
    text = perflab("history", "tiny", "--store", str(db)).out
    assert text.splitlines()[1].startswith("warning: 1 experiment without a version (#2)")
    failing = write_spec(tmp_path, SMALL.format(extra="").replace('"true"', '"exit 1"'), "f.toml")
    r = perflab("run", str(failing), "--store", str(db), "--no-compare", "--version", "3.0")
    assert r.code == 1  # its runs failed: a version without a measured run is left out
    doc = json.loads(perflab("history", "tiny", "--store", str(db), "--format", "json").out)
    assert [v["label"] for v in doc["versions"]] == ["2.9", "2.10", "#2"]
    assert "#4 measured nothing" in doc["warnings"][0]["message"]


def test_an_unfinished_experiment_of_another_version_is_not_continued(tmp_path):
    from perflab.execution.experiment import open_experiment
    from perflab.records import Position
    from perflab.spec import load_spec
    from perflab.store import Database

    spec = load_spec(write_spec(tmp_path, SMALL.format(extra="")))
    with Database(tmp_path / "p.db") as store:
        first = open_experiment(store, spec, position=Position("v1"))
        again = open_experiment(store, spec, position=Position("v1"))
        other = open_experiment(store, spec, position=Position("v2"))
        assert again.resumed and again.id == first.id
        assert not other.resumed and other.id != first.id
        assert store.experiment(other.id).version == "v2"


def test_a_store_of_schema_2_reads_without_versions_and_is_migrated_by_a_writer(tmp_path):
    import sqlite3

    db = tmp_path / "p.db"
    spec = write_spec(tmp_path, SMALL.format(extra=""))
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code == 0
    con = sqlite3.connect(db)
    for column in ("version", "source_commit", "source_repo"):
        con.execute(f"ALTER TABLE experiments DROP COLUMN {column}")
    con.execute("ALTER TABLE runs DROP COLUMN device")  # schema 4's
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
    before = db.read_bytes()
    listed = json.loads(perflab("ls", "--json", "--store", str(db)).out)
    assert [(e["version"], e["source_commit"]) for e in listed] == [(None, None)]
    assert db.read_bytes() == before  # a reading command migrates nothing
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--version", "3.0")
    assert r.code == 0, r.err
    listed = json.loads(perflab("ls", "--json", "--store", str(db)).out)
    assert [e["version"] for e in listed] == ["3.0", None]
