"""The failure policy: an experiment whose runs fail the same way stops early, with a
message that names the step, its exit status and the last line of its stderr; exit
codes say what happened (0 all ok, 1 failed runs or stopped, 2 bad input)."""

from __future__ import annotations

import sqlite3

import pytest
from cli_helpers import perflab, write_spec
from perflab.execution.failure_policy import Failure, FailurePolicy

SPEC = """\
name = "policy"
baseline = "a"
repetitions = 20
{extra}

[[variant]]
name = "a"
{setup_a}
[[variant]]
name = "b"
{setup_b}

[[phase]]
name = "p"
command = "{command}"

[[metric]]
name = "wall_time"
better = "lower"
harness = "wall_time"
"""


def spec(tmp_path, *, command="true", extra="", setup_a="", setup_b=""):
    return write_spec(
        tmp_path, SPEC.format(command=command, extra=extra, setup_a=setup_a, setup_b=setup_b)
    )


def statuses(db) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    finally:
        con.close()


def test_every_run_failing_the_same_way_stops_after_three(tmp_path):
    db = tmp_path / "p.db"
    r = perflab(
        "run", str(spec(tmp_path, command="echo 'no such file' >&2; exit 3")), "--store", str(db)
    )
    assert r.code == 1
    assert statuses(db) == {"failed": 3, "pending": 37}
    # the message names the step, its exit status and the last line of its stderr
    assert (
        "the last 3 runs failed the same way: phase:p: exited with status 3: no such file "
        "(max_failures = 3; 0 never stops)"
    ) in r.err
    assert "stopped early with 3 failed runs and 0 ok" in r.err
    assert "n/a" not in r.out  # no table of nothing
    con = sqlite3.connect(db)
    assert con.execute("SELECT status FROM experiments").fetchall() == [("aborted",)]
    con.close()


def test_max_failures_from_the_spec_and_the_command_line(tmp_path):
    db = tmp_path / "p.db"
    failing = spec(tmp_path, command="exit 4", extra="max_failures = 5")
    assert perflab("run", str(failing), "--store", str(db)).code == 1
    assert statuses(db) == {"failed": 5, "pending": 35}
    db2 = tmp_path / "p2.db"
    assert perflab("run", str(failing), "--store", str(db2), "--max-failures", "2").code == 1
    assert statuses(db2) == {"failed": 2, "pending": 38}


def test_a_broken_variant_in_an_interleaved_design_stops_after_its_first_runs(tmp_path):
    db = tmp_path / "p.db"
    s = spec(tmp_path, setup_b='setup = "echo cannot start >&2; exit 7"')
    r = perflab("run", str(s), "--store", str(db))
    assert r.code == 1
    st = statuses(db)
    assert st["failed"] == 3 and st["ok"] <= 3 + 1  # a's runs interleaved with b's first three
    assert (
        "the first 3 runs of variant 'b' failed the same way: setup: exited with status 7: cannot start"
        in r.err
    )


def test_different_failures_do_not_count_as_the_same_way(tmp_path):
    db = tmp_path / "p.db"
    # exit status alternates 3, 4, 3, 4 ...: never three alike in a row, and no variant's
    # first three alike either (each variant sees both); the share rule stops it at 10
    s = spec(tmp_path, command="exit $(( 3 + {run} % 2 ))")
    r = perflab("run", str(s), "--store", str(db))
    assert r.code == 1
    assert statuses(db) == {"failed": 10, "pending": 30}
    assert "10 of 10 runs failed, more than max_failure_share = 50%" in r.err


def test_share_rule_can_be_turned_off_and_every_run_then_runs(tmp_path):
    db = tmp_path / "p.db"
    s = spec(
        tmp_path,
        command="exit 3",
        extra='max_failures = 0\nmax_failure_share = "100%"\nrepetitions = 6',
    )
    s.write_text(s.read_text().replace("repetitions = 20\n", "", 1))
    r = perflab("run", str(s), "--store", str(db))
    assert r.code == 1
    assert statuses(db) == {"failed": 12}
    assert "finished with 12 failed runs and 0 ok" in r.err


def test_all_ok_exits_zero_and_some_failed_exits_one(tmp_path):
    db = tmp_path / "p.db"
    assert perflab("run", str(spec(tmp_path)), "--store", str(db), "--no-compare").code == 0
    assert statuses(db) == {"ok": 40}
    db2 = tmp_path / "p2.db"
    # one run in 40 fails: the experiment completes, and the exit code says a run failed
    r = perflab(
        "run", str(spec(tmp_path, command="test {run} != 7")), "--store", str(db2), "--no-compare"
    )
    assert r.code == 1
    assert statuses(db2) == {"ok": 39, "failed": 1}
    assert "finished with 1 failed run and 39 ok" in r.err


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_bad_max_failures_argument_is_one_line(tmp_path, value):
    r = perflab(
        "run", str(spec(tmp_path)), "--store", str(tmp_path / "p.db"), "--max-failures", value
    )
    assert r.code == 2
    assert (
        len(r.err.strip().splitlines()) == 1
        and "--max-failures" in r.err
        and "Traceback" not in r.err
    )
    assert not (tmp_path / "p.db").exists()


@pytest.mark.parametrize(
    "line, message",
    [
        ("max_failures = -1", "max_failures"),
        ("max_failures = true", "max_failures"),
        ('max_failure_share = "0%"', "max_failure_share"),
        ("max_failure_share = 0.5", "max_failure_share"),
        ('kill_grace = "soon"', "kill_grace"),
    ],
)
def test_bad_policy_settings_in_the_spec(tmp_path, line, message):
    r = perflab("run", str(spec(tmp_path, extra=line)), "--store", str(tmp_path / "p.db"))
    assert r.code == 2
    assert message in r.err and "spec.toml:4" in r.err
    assert not (tmp_path / "p.db").exists()


# --- the rules on their own -------------------------------------------------------


def f(step="phase:p", kind="exited with status 3") -> Failure:
    return Failure(step, kind, f"{step}: {kind}")


def test_policy_streak_resets_on_success_and_on_another_failure():
    p = FailurePolicy(max_failures=3, max_share=1.0)
    seq = [
        ("a", f()),
        ("b", f()),
        ("a", None),
        ("b", None),
        ("a", f(kind="killed by SIGSEGV")),
        ("b", f()),
    ]
    assert [p.observe(v, x) for v, x in seq] == [None] * 6
    assert p.observe("a", f()) is None  # streak: SIGSEGV≠3, then 3, 3 → two alike
    assert p.observe("b", f()) is not None  # three alike in a row


def test_policy_zero_never_stops_on_streaks():
    p = FailurePolicy(max_failures=0, max_share=1.0)
    assert all(p.observe("a", f()) is None for _ in range(100))


def test_policy_share_counts_from_ten_runs():
    p = FailurePolicy(max_failures=0, max_share=0.5)
    results = [p.observe("a", f() if i % 3 else None) for i in range(30)]  # 2 of 3 fail
    assert results[:9] == [None] * 9 and results[9] is not None
