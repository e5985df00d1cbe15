"""The two kinds of warning on the first screen (docs/statistics.md): those that change how
a cell must be read are shown under the table, worst first; those that explain what
perflab already did (the method chosen for outlying runs, ties handled) only with
--verbose, in --json, and as a mark on the cells they concern. On stored experiments
(CSV imports), not timing."""

from __future__ import annotations

import json

from cli_helpers import perflab

# u: one outlying run of a, tied values — both handled (Mann–Whitney, tie correction).
# t: a drifting baseline and a candidate in two groups — both change the reading.
_U_A = [100.0, 100.5, 99.8, 130.0, 100.1, 99.9, 100.3, 100.0, 100.4, 99.7, 100.2, 100.1]
_U_B = [110.0, 110.5, 109.8, 110.2, 110.1, 109.9, 110.3, 110.0, 110.4, 109.7, 110.2, 110.1]
_T_A = [100.0 + i for i in range(12)]
_T_B = [(110.0 if i % 2 == 0 else 130.0) + 0.1 * i for i in range(12)]


def _store(tmp_path, *metrics: str):
    rows = ["variant,t,u"]
    for ta, tb, ua, ub in zip(_T_A, _T_B, _U_A, _U_B, strict=True):
        rows += [f"a,{ta},{ua}", f"b,{tb},{ub}"]
    csv = tmp_path / "runs.csv"
    csv.write_text("\n".join(rows) + "\n")
    db = tmp_path / "p.db"
    args = [a for m in metrics for a in ("--metric", f"{m}:lower:ms")]
    r = perflab("import", str(csv), "--variant", "variant", *args, "--baseline", "a",
                "--store", str(db))  # fmt: skip
    assert r.code == 0, r.err
    return db


def _warnings(out: str) -> list[str]:
    """Each warning's text, joined across its wrapped lines."""
    said: list[str] = []
    for line in out.splitlines():
        if line.startswith("warning: "):
            said.append(line.removeprefix("warning: "))
        elif said and line and not line.startswith(("┏", "┃", "┡", "│", "└", "°")):
            said[-1] += " " + line
    return said


def test_caveats_perflab_handled_are_marks_not_warnings(tmp_path):
    db = _store(tmp_path, "u")
    out = perflab("compare", "1", "--store", str(db)).out
    assert _warnings(out) == [], out
    assert "%° worse" in out  # the cell perflab adjusted is marked…
    joined = " ".join(out.split())
    assert "° caveats perflab dealt with here: outlying runs, tied values (each in full" in joined
    assert "perflab compare 1 --verbose" in joined  # …and says where they are in full
    verbose = _warnings(perflab("compare", "1", "--store", str(db), "--verbose").out)
    assert [w.split(":")[0] for w in verbose] == ["a · u", "b · u"]
    assert "outliers" in verbose[0] and "tied values" in verbose[1]
    doc = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    assert {(w["code"], w["kind"]) for w in doc["warnings"]} == {
        ("outliers", "explains"),
        ("ties", "explains"),
    }


def test_what_changes_the_reading_is_shown_worst_first(tmp_path):
    db = _store(tmp_path, "t", "u")
    said = _warnings(perflab("compare", "1", "--store", str(db)).out)
    # runs in two groups rank above drift (the comparison found the drift first)
    assert len(said) == 2, said
    assert said[0].startswith("b · t: runs fall into two groups"), said
    assert said[1].startswith("a · t: values drift"), said
    verbose = _warnings(perflab("compare", "1", "--store", str(db), "--verbose").out)
    assert len(verbose) == 4 and verbose[0].startswith("a · t: values drift"), verbose


def _two_cells(tmp_path, low: float, high: float):
    """b against a at n=1 and n=8: its means ``low`` and ``high`` times a's (±0.5%)."""
    rows = ["variant,n,t"]
    for i in range(8):
        wiggle = 1 + 0.005 * ((i % 3) - 1)
        for n, factor in (("1", low), ("8", high)):
            rows += [f"a,{n},{100 * wiggle}", f"b,{n},{100 * factor * wiggle}"]
    (tmp_path / "cells.csv").write_text("\n".join(rows) + "\n")
    db = tmp_path / "cells.db"
    r = perflab("import", str(tmp_path / "cells.csv"), "--variant", "variant", "--param", "n",
                "--metric", "t:lower:ms", "--baseline", "a", "--store", str(db))  # fmt: skip
    assert r.code == 0, r.err
    return perflab("compare", "1", "--store", str(db)).out


def test_a_geometric_mean_warns_when_its_cells_go_opposite_ways(tmp_path):
    """Cells that go one way by different amounts are what their average is (each is in
    the table); cells that go opposite ways make the average hide a gain and a loss."""
    one_way = tmp_path / "one"
    one_way.mkdir()
    out = _two_cells(one_way, 0.3, 0.2)
    assert not any("hides a trend" in w for w in _warnings(out)), out
    assert "cells that differ under a geometric mean" in " ".join(out.split())
    both = tmp_path / "both"
    both.mkdir()
    said = _warnings(_two_cells(both, 1.2, 0.8))
    assert any("hides a trend" in w for w in said), said
