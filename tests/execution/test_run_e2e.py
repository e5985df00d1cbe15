"""End-to-end experiments of real commands through the CLI: metrics, failures,
timeouts, abort, environment capture, resume after SIGKILL and after Ctrl-C."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import CliResult, perflab, perflab_process, write_spec

SPEC = """\
name = "e2e"
baseline = "fast"
repetitions = 4
warmup = 1
timeout = "{timeout}"
on_failure = "{on_failure}"
{policy}
tools = ["python3"]
before_each = "echo reset >> {{log}}"

[params]
log = "{log}"

[matrix]
n = {{ small = 1000, big = 20000 }}

[[variant]]
name = "fast"
params = {{ loops = 1 }}
[[variant]]
name = "slow"
params = {{ loops = 3 }}
{extra_variant}

[[phase]]
name = "prepare"
measure = false
command = "echo prepare {{variant}} {{n}}"

[[phase]]
name = "work"
command = "{work}"

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
[[metric]]
name = "items"
json = "result.items"
better = "higher"
[[metric]]
name = "rate"
regex = "rate=(?P<value>[0-9.]+)"
stream = "stderr"
better = "higher"
"""

WORK = (
    "python3 -c 'import sys,json; n={n}*{loops}; s=sum(i*i for i in range(n)); "
    'print(json.dumps(dict(result=dict(items=n)))); print(\\"rate=%d\\" % (n*7), file=sys.stderr)\''
)


def make_spec(
    tmp_path, *, work=WORK, timeout="30s", on_failure="continue", extra_variant="", policy=""
):
    text = SPEC.format(
        timeout=timeout,
        on_failure=on_failure,
        log=tmp_path / "log.txt",
        policy=policy,
        extra_variant=extra_variant,
        work=work.replace("{", "{{")
        .replace("}", "}}")
        .replace("{{n}}", "{n}")
        .replace("{{loops}}", "{loops}"),
    )
    # put the parameter placeholders back (they were escaped with the rest)
    text = text.replace("{{n}}", "{n}").replace("{{loops}}", "{loops}")
    return write_spec(tmp_path, text)


def db_rows(db, sql, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


@dataclass(frozen=True)
class Experiment:
    spec: Path
    db: Path
    run: CliResult  # what `perflab run` printed
    hook_lines: int  # lines the before_each hook had written when the run ended


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Experiment:
    """The default spec, run once (20 runs) for the tests that only read its result; a test
    that adds to its store works on a copy."""
    folder = tmp_path_factory.mktemp("e2e")
    spec = make_spec(folder)
    db = folder / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    return Experiment(spec, db, r, (folder / "log.txt").read_text().count("reset"))


def test_run_stores_every_run_and_prints_tldr(experiment):
    db, r = experiment.db, experiment.run
    assert r.code == 0, r.err
    assert "TLDR — slow vs fast" in r.out
    # 2 cells x 2 variants x (4 + 1 warm-up) runs, all ok, each with 3 metrics
    assert db_rows(db, "SELECT status, count(*) FROM runs GROUP BY status") == [("ok", 20)]
    assert db_rows(db, "SELECT count(*) FROM metrics")[0][0] == 60
    items = db_rows(
        db,
        "SELECT r.cell_key, r.variant, m.value FROM metrics m JOIN runs r ON r.id=m.run_id "
        "WHERE m.name='items' GROUP BY r.cell_key, r.variant ORDER BY 1, 2",
    )
    assert items == [
        ("n=big", "fast", 20000.0),
        ("n=big", "slow", 60000.0),
        ("n=small", "fast", 1000.0),
        ("n=small", "slow", 3000.0),
    ]
    rates = db_rows(db, "SELECT DISTINCT m.value FROM metrics m WHERE m.name='rate' ORDER BY 1")
    assert [x for (x,) in rates] == [7000.0, 21000.0, 140000.0, 420000.0]
    # hooks ran before every run; stdout/stderr of every step are kept
    assert experiment.hook_lines == 20
    assert (
        db_rows(db, "SELECT count(*) FROM artifacts WHERE name='stdout:phase:prepare'")[0][0] == 20
    )
    # items is deterministic: the TLDR shows slow's 3x items as +[200.0, 200.0]% (exact, zero variance)
    c = perflab("compare", "last", "--store", str(db), "--json")
    doc = json.loads(c.out)
    assert doc["schema"] == "perflab.compare/1"
    items_cmp = [x for x in doc["comparisons"] if x["metric"] == "items"]
    assert {x["verdict"] for x in items_cmp} == {"better"}
    assert all(abs(x["estimate"] - 2.0) < 1e-12 for x in items_cmp)
    # warm-ups are excluded: n = 4 per variant
    assert {s["n"] for s in doc["summaries"]} == {4}


def test_interleaved_order_is_blocked_and_reproducible(experiment):
    spec, db = experiment.spec, experiment.db
    assert experiment.run.code == 0
    rows = db_rows(db, "SELECT block, cell_key, variant, warmup FROM runs ORDER BY order_index")
    for b in range(5):  # every block holds each (cell, variant) exactly once
        block = sorted((c, v) for blk, c, v, _ in rows if blk == b)
        assert block == [
            ("n=big", "fast"),
            ("n=big", "slow"),
            ("n=small", "fast"),
            ("n=small", "slow"),
        ]
    assert [w for _, _, _, w in rows[:4]] == [1, 1, 1, 1]
    dry1 = perflab("run", str(spec), "--dry-run").out
    dry2 = perflab("run", str(spec), "--dry-run").out
    assert dry1 == dry2
    orders = {tuple(l.split()[3:5]) for l in dry1.splitlines()[2:6]}
    assert len(orders) == 4


def test_environment_captured_once_and_shown(experiment):
    db = experiment.db
    assert experiment.run.code == 0
    assert db_rows(db, "SELECT count(*) FROM environment")[0][0] == 1
    names = {n for (n,) in db_rows(db, "SELECT name FROM artifacts WHERE run_id IS NULL")}
    assert {"/proc/cpuinfo", "/proc/meminfo", "uname -a"} <= names
    info = json.loads(db_rows(db, "SELECT info FROM environment")[0][0])
    assert "python3" in json.dumps(info.get("tools", {}))
    shown = perflab("show", "last", "--store", str(db))
    assert shown.code == 0
    assert "environment of" in shown.out and "kernel" in shown.out.lower()
    cpuinfo = perflab("show", "last", "--store", str(db), "--artifact", "/proc/cpuinfo")
    assert "processor" in cpuinfo.out


def test_failing_command_is_recorded_and_experiment_goes_on(tmp_path):
    extra = '[[variant]]\nname = "broken"\nsetup = "echo cannot start >&2; exit 3"\nparams = { loops = 1 }'
    spec = make_spec(
        tmp_path, extra_variant=extra, policy='max_failures = 0\nmax_failure_share = "100%"'
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 1, r.err  # it ended with failed runs
    assert "finished with 10 failed runs and 20 ok" in r.err
    failed = db_rows(db, "SELECT DISTINCT variant, status, reason FROM runs WHERE status != 'ok'")
    assert failed == [("broken", "failed", "setup: exited with status 3: cannot start")]
    assert db_rows(db, "SELECT count(*) FROM runs WHERE status='ok'")[0][0] == 20
    assert "10 run(s) failed or timed out" in r.out
    s = perflab("show", "last", "--store", str(db))
    assert "failed run(s)" in s.out and "cannot start" in s.out


def test_abort_on_failure_stops_the_experiment(tmp_path):
    extra = '[[variant]]\nname = "broken"\nsetup = "exit 3"\nparams = { loops = 1 }'
    spec = make_spec(tmp_path, extra_variant=extra, on_failure="abort")
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 1
    assert 'on_failure = "abort"' in r.err
    assert db_rows(db, "SELECT status FROM experiments") == [("aborted",)]
    statuses = [s for (s,) in db_rows(db, "SELECT status FROM runs ORDER BY order_index")]
    first_fail = statuses.index("failed")
    assert set(statuses[first_fail + 1 :]) == {"pending"}
    assert statuses.count("failed") == 1


def test_hanging_command_times_out(tmp_path):
    spec = make_spec(tmp_path, work="sleep 60", timeout="300ms")
    db = tmp_path / "p.db"
    t0 = time.monotonic()
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--max-failures", "0")
    elapsed = time.monotonic() - t0
    assert r.code == 1
    reasons = {
        x for (x,) in db_rows(db, "SELECT DISTINCT reason FROM runs WHERE status != 'pending'")
    }
    assert reasons == {"phase:work: timed out (run timeout 0.3 s)"}
    # --max-failures 0: only the share rule stops it, once 10 runs have finished
    assert db_rows(db, "SELECT status, count(*) FROM runs GROUP BY status") == [
        ("pending", 10),
        ("timeout", 10),
    ]
    assert "10 of 10 runs failed, more than max_failure_share = 50%" in r.err
    # 10 runs, each cut at ~0.3 s: far less than one 60 s sleep
    assert elapsed < 60


def test_metric_missing_from_output_fails_the_run(tmp_path):
    spec = make_spec(tmp_path, work="echo not json; echo rate=1 >&2")
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1
    reasons = {
        x for (x,) in db_rows(db, "SELECT DISTINCT reason FROM runs WHERE status != 'pending'")
    }
    assert reasons == {"metric 'items': stdout is not JSON"}
    assert db_rows(db, "SELECT count(*) FROM runs WHERE status = 'failed'") == [
        (3,)
    ]  # max_failures


def _wait_for(db, sql, predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            rows = db_rows(db, sql)
            if predicate(rows):
                return rows
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {sql}")


SLOW_SPEC = """\
name = "slow"
baseline = "fast"
repetitions = 4
warmup = 1

[params]
log = "LOG"

[matrix]
n = [1, 2]

[[variant]]
name = "fast"
[[variant]]
name = "slow"

[[phase]]
name = "work"
command = "echo start {run} >> {log}; sleep 0.4; echo end {run} >> {log}"

[[metric]]
name = "wall_time"
better = "lower"
"""


def slow_spec(tmp_path):
    return write_spec(tmp_path, SLOW_SPEC.replace("LOG", str(tmp_path / "log.txt")))


def _log_events(tmp_path):
    return [
        tuple(l.split()) for l in (tmp_path / "log.txt").read_text().splitlines() if l != "reset"
    ]


def test_resume_after_sigkill_loses_and_repeats_nothing(tmp_path):
    spec = slow_spec(tmp_path)
    db = tmp_path / "p.db"
    p = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
    # kill -9 the runner while a run is in flight, after at least 3 runs are committed
    _wait_for(
        db,
        "SELECT status FROM runs",
        lambda rows: sum(s == "ok" for (s,) in rows) >= 3 and any(s == "running" for (s,) in rows),
    )
    _wait_for(db, "SELECT pid FROM runs WHERE status='running'", lambda rows: rows and rows[0][0])
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    done_before = {o for (o,) in db_rows(db, "SELECT order_index FROM runs WHERE status='ok'")}
    leftover = db_rows(db, "SELECT pid FROM runs WHERE status='running'")
    assert len(leftover) == 1
    assert db_rows(db, "SELECT status FROM experiments") == [("running",)]
    events_before = len(_log_events(tmp_path))

    r = perflab("run", str(spec), "--store", str(db), "--no-compare")  # same spec: continues
    assert r.code == 0, r.err
    assert "continuing unfinished experiment 1" in r.err
    assert db_rows(db, "SELECT count(*) FROM experiments")[0][0] == 1
    assert db_rows(db, "SELECT status FROM experiments") == [("complete",)]
    oks = [
        o
        for (o,) in db_rows(
            db, "SELECT order_index FROM runs WHERE status='ok' ORDER BY order_index"
        )
    ]
    assert oks == list(range(20))  # nothing lost
    # nothing repeated: no run finished before the kill was started again afterwards
    started_after = [
        int(run) - 1 for kind, run in _log_events(tmp_path)[events_before:] if kind == "start"
    ]
    assert not set(started_after) & done_before
    assert len(started_after) == 20 - len(done_before)
    # the process the killed runner left behind was killed on resume
    pid = leftover[0][0]
    assert (
        not os.path.exists(f"/proc/{pid}")
        or "Z" in open(f"/proc/{pid}/stat").read().split(")")[1][:3]
    )
    attempts = db_rows(db, "SELECT max(attempts) FROM runs")[0][0]
    assert attempts == 2  # the run in flight at the kill was redone, once


def test_ctrl_c_stops_cleanly_and_resume_by_id(tmp_path):
    spec = slow_spec(tmp_path)
    db = tmp_path / "p.db"
    p = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
    _wait_for(
        db,
        "SELECT status FROM runs",
        lambda rows: sum(s == "ok" for (s,) in rows) >= 2 and any(s == "running" for (s,) in rows),
    )
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "resume with: perflab run --resume 1" in err
    assert "Traceback" not in err
    assert db_rows(db, "SELECT status FROM experiments") == [("interrupted",)]
    assert db_rows(db, "SELECT count(*) FROM runs WHERE status='running'")[0][0] == 0
    done = db_rows(db, "SELECT count(*) FROM runs WHERE status='ok'")[0][0]
    assert 2 <= done < 20
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert f"{done} of 20 runs already done" in r.err
    assert db_rows(db, "SELECT status, count(*) FROM runs GROUP BY status") == [("ok", 20)]


def test_new_flag_starts_over_and_complete_spec_starts_new(experiment, tmp_path):
    spec, db = experiment.spec, tmp_path / "p.db"
    assert experiment.run.code == 0
    src, dst = sqlite3.connect(experiment.db), sqlite3.connect(db)
    try:
        src.backup(dst)  # a copy of the store: the same spec, run to the end once already
    finally:
        src.close()
        dst.close()
    assert perflab("run", str(spec), "--store", str(db), "--no-compare").code == 0
    assert db_rows(db, "SELECT id, status FROM experiments") == [(1, "complete"), (2, "complete")]
    r = perflab("run", "--resume", "1", "--store", str(db))
    assert r.code == 2 and "already complete" in r.err
    ls = perflab("ls", "--store", str(db), "--json")
    assert [e["id"] for e in json.loads(ls.out)] == [2, 1]


def test_harness_metrics_are_the_commands_own(tmp_path):
    """max_rss reflects the command (not the Python harness), CPU time is measured."""
    from perflab.hosts.process import exec_shim, run_process
    from perflab.hosts.step import StepRequest

    assert exec_shim() is not None, "scripts/setup installs the perflab-exec shim"
    step = StepRequest("true", tmp_path, tmp_path / "o", tmp_path / "e", dict(os.environ))
    small = run_process(step)
    big = run_process(
        dataclasses.replace(
            step,
            command="python3 -c 'x = bytearray(300 * 2**20); x[::4096] = bytes(len(x[::4096]) * [1])'",
        )
    )
    own_rss_kib = int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0])
    assert small.exit_code == 0 and small.max_rss_kib < own_rss_kib  # not the harness's floor
    assert small.max_rss_kib < 16 * 1024
    assert 300 * 1024 < big.max_rss_kib < 600 * 1024
    assert big.user_s + big.system_s > 0.01
    killed = run_process(dataclasses.replace(step, command="kill -9 $$"))
    assert killed.signal == 9 and killed.exit_code is None
    assert killed.describe_failure() == "killed by SIGKILL"


def test_exports_are_rewritten_after_every_run(tmp_path):
    spec = slow_spec(tmp_path)
    db = tmp_path / "p.db"
    out_json, out_md = tmp_path / "exp" / "result.json", tmp_path / "exp" / "result.md"
    p = perflab_process(
        "run",
        str(spec),
        "--store",
        str(db),
        "--no-compare",
        "--export",
        str(out_json),
        "--export",
        str(out_md),
    )
    # while it runs, the export already holds the finished runs
    _wait_for(db, "SELECT status FROM runs", lambda rows: sum(s == "ok" for (s,) in rows) >= 6)
    partial = json.loads(out_json.read_text())
    assert any(w["code"] == "incomplete" for w in partial["warnings"])
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    assert json.loads(out_json.read_text())["schema"] == "perflab.compare/1"  # never half-written
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--export", str(out_json))
    assert r.code == 0, r.err
    final = json.loads(out_json.read_text())
    assert not any(w["code"] == "incomplete" for w in final["warnings"])
    assert {s["n"] for s in final["summaries"]} == {4}
    assert "| n | mean | median | stddev | min | max | ± MoE |" in out_md.read_text()


def test_unknown_export_format_fails_before_running(tmp_path):
    spec = make_spec(tmp_path)
    r = perflab(
        "run", str(spec), "--store", str(tmp_path / "p.db"), "--export", str(tmp_path / "x.xlsx")
    )
    assert r.code == 2 and "unknown format '.xlsx'" in r.err
    assert not (tmp_path / "p.db").exists()


def test_relative_program_path_without_shell_is_found_from_the_spec_directory(
    tmp_path, monkeypatch
):
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho '{\"v\": 4}'\n")
    tool.chmod(0o755)
    spec = write_spec(
        tmp_path,
        """\
name = "relpath"
baseline = "a"
repetitions = 2
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
shell = false
command = "bin/tool"
[[metric]]
name = "v"
json = "v"
better = "lower"
""",
    )
    monkeypatch.chdir("/")  # perflab started elsewhere: the path is the spec directory's
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert db_rows(db, "SELECT status, count(*) FROM runs GROUP BY status") == [("ok", 4)]
