"""`perflab compare A B` / `perflab report A B`: experiment B against experiment A as the
baseline, matched by cell, variant and metric. Two runs of one small deterministic spec
(the second shifted by a known amount) give intervals checked against Welch computed
directly on the stored samples."""

from __future__ import annotations

import json

import pytest
from cli_helpers import perflab, write_spec
from perflab.analysis.dataset import load_dataset
from perflab.stats import get_method
from perflab.store import Database

SPEC = """\
name = "{name}"
baseline = "old"
repetitions = 6
timeout = "20s"

[params]
shift = {shift}

[matrix]
size = [10, 100]

[[variant]]
name = "{v1}"
params = {{ offset = 0 }}
[[variant]]
name = "{v2}"
params = {{ offset = 5 }}

[[phase]]
name = "emit"
command = "echo value=$(( {{size}} + {{offset}} + {{repetition}} % 3 + {{shift}} ))"

[[metric]]
name = "value"
unit = "{unit}"
better = "lower"
regex = 'value=(?P<value>[0-9]+)'
"""


def _run(tmp_path, db, *, shift, name="cross", v1="old", v2="new", unit="ms", tag=""):
    text = SPEC.format(name=name, shift=shift, v1=v1, v2=v2, unit=unit)
    if v1 != "old":
        text = text.replace('baseline = "old"', f'baseline = "{v1}"')
    spec = write_spec(tmp_path, text, f"spec{tag or shift}.toml")
    r = perflab("run", str(spec), "--store", str(db), "--new", "--no-compare")
    assert r.code == 0, r.err


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("cross")
    db = d / "p.db"
    _run(d, db, shift=0)  # experiment 1
    _run(d, db, shift=10)  # experiment 2: every value 10 higher
    return db, d


def test_compare_two_experiments_matches_welch_on_the_stored_samples(store):
    db, _ = store
    r = perflab("compare", "1", "2", "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["experiment"]["baseline"] == "#1" and doc["experiment"]["variants"] == ["#1", "#2"]
    assert doc["experiment"]["params"] == ["size", "variant"]
    comps = {c["cell"]: c for c in doc["comparisons"]}
    assert sorted(comps) == [
        "size=10,variant=new",
        "size=10,variant=old",
        "size=100,variant=new",
        "size=100,variant=old",
    ]
    with Database(db) as s:
        a, b = load_dataset(s, 1), load_dataset(s, 2)
    welch = get_method("welch")
    for size in ("10", "100"):
        for v in ("old", "new"):
            xa = a.sample(f"size={size}", v, "value")
            xb = b.sample(f"size={size}", v, "value")
            assert len(xa) == len(xb) == 6 and [y - x for x, y in zip(xa, xb)] == [10.0] * 6
            want = welch.compare(xa, xb, 0.95)
            got = comps[f"size={size},variant={v}"]
            assert got["estimate"] == pytest.approx(want.estimate, rel=1e-12)
            assert (got["low"], got["high"]) == (
                pytest.approx(want.low, rel=1e-12),
                pytest.approx(want.high, rel=1e-12),
            )
            assert got["verdict"] == "worse"  # lower is better and B is higher everywhere
    # The terminal form names the sides and prints the same intervals.
    t = perflab("compare", "1", "2", "--store", str(db), "--no-summary")
    assert t.code == 0, t.err
    assert "TLDR — #2 vs #1" in t.out
    for c in doc["comparisons"]:
        assert c["tldr"] in t.out


def test_variant_pairs_and_selection(store):
    db, _ = store
    r = perflab("compare", "1", "2", "--store", str(db), "--json", "--variant", "old=new")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["experiment"]["params"] == ["size"]  # one pair: no variant column
    c = {x["cell"]: x for x in doc["comparisons"]}
    # new of B (value + 5 + 10) against old of A: +15 over a mean of size + 1
    assert c["size=10"]["estimate"] == pytest.approx(15 / 11)
    assert c["size=100"]["estimate"] == pytest.approx(15 / 101)
    r = perflab("compare", "1", "2", "--store", str(db), "--json", "--variant", "new")
    assert [x["cell"] for x in json.loads(r.out)["comparisons"]] == ["size=10", "size=100"]


def test_report_of_two_experiments(store):
    db, d = store
    r = perflab("report", "1", "2", "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [e["id"] for e in doc["experiments"]] == [1, 2]
    runs = doc["runs"]
    assert len(runs) == 2 * 2 * 2 * 6
    first_b = min(x["position"] for x in runs if x["experiment"] == 2)
    assert first_b == max(x["position"] for x in runs if x["experiment"] == 1) + 1
    assert {x["variant"] for x in runs} == {"#1", "#2"}
    assert {
        "what": "the comparison, in the terminal",
        "command": f"perflab compare 1 2 --store {db}",
    } in doc["reproduce"]
    env = doc["environment"]
    assert [c["label"].split(" · ")[0] for c in env["columns"]] == ["#1", "#2"]
    assert not any(row["differs"] for row in env["rows"])  # same host, captured twice
    assert "experiment 2 against experiment 1" in doc["description"]
    html = d / "cross.html"
    r = perflab("report", "1", "2", "--store", str(db), "-o", str(html))
    assert r.code == 0, r.err
    text = html.read_text()
    assert "cross #2 vs cross #1" in text and text.count('class="plot"') == 4  # 1 metric × 4 kinds


def test_environment_differences_are_highlighted(store, tmp_path):
    db, _ = store
    with Database(db) as s:
        envs = s.environments(2)
        host, info = next(iter(envs.items()))
        s.put_environment(
            2, host, {**info, "kernel": "Linux 9.9.9-patched", "loadavg": [9.0, 9.0, 9.0]}, {}
        )
    r = perflab("report", "1", "2", "--store", str(db), "--json")
    rows = {row["label"]: row for row in json.loads(r.out)["environment"]["rows"]}
    assert [label for label, row in rows.items() if row["differs"]] == [
        "Kernel"
    ]  # load is volatile
    assert rows["Kernel"]["values"][1] == "Linux 9.9.9-patched"
    html = tmp_path / "env.html"
    assert perflab("report", "1", "2", "--store", str(db), "-o", str(html)).code == 0
    text = html.read_text()
    assert text.count('<tr class="diff">') == 1
    assert '<tr class="diff"><td>Kernel</td>' in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["1", "1"], "both sides are experiment 1"),
        (["1", "2", "--variant", "nope"], "experiment 1 has no variant 'nope'"),
        (["1", "2", "--method", "paired"], "the paired method needs runs interleaved in blocks"),
        (["1", "--variant", "old"], "--variant pairs variants of two experiments"),
        (["1", "99"], "no experiment '99'"),
    ],
)
def test_bad_pairs_are_one_line_errors(store, argv, message):
    db, _ = store
    for cmd in ("compare", "report"):
        r = perflab(cmd, *argv, "--store", str(db), *(["--json"] if cmd == "report" else []))
        assert r.code == 2, (cmd, r.out, r.err)
        assert (
            r.err.startswith("perflab: error: ") and message in r.err and r.err.count("\n") == 1
        ), r.err


def test_mismatched_experiments(tmp_path):
    db = tmp_path / "p.db"
    _run(tmp_path, db, shift=0)  # 1
    _run(tmp_path, db, shift=0, unit="s", tag="unit")  # 2: same metric, another unit
    _run(tmp_path, db, shift=0, v1="x", v2="y", tag="names")  # 3: no variant in common
    r = perflab("compare", "1", "2", "--store", str(db))
    assert r.code == 2 and "metric 'value' differs: 'ms'" in r.err, r.err
    r = perflab("compare", "1", "3", "--store", str(db))
    assert (
        r.code == 2 and "no variant name in common" in r.err and "--variant A_NAME=B_NAME" in r.err
    ), r.err
    r = perflab("compare", "1", "3", "--store", str(db), "--variant", "old=x", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["comparisons"][0]["estimate"] == pytest.approx(0.0)
