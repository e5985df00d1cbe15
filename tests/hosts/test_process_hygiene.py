"""Nothing a step starts outlives its scope: background children, daemons that detach
(double fork + setsid), commands that ignore SIGTERM, perflab stopped by SIGTERM or killed
by SIGKILL — and perflab's scratch folders go with it. Real processes throughout; every
"is it gone" is a bounded poll of /proc."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from cli_helpers import perflab, perflab_process, write_spec
from perflab.execution.scratch import PREFIX, remove_stale_scratch
from perflab.hosts.process import process_start_time, run_process
from perflab.hosts.step import StepRequest
from proc_helpers import gone, live, marker_sleep, wait_until

SPEC = """\
name = "hygiene"
baseline = "a"
repetitions = {reps}
{extra}

[params]
bin = "{bin}"

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
command = "{command}"

[[metric]]
name = "wall_time"
better = "lower"
harness = "wall_time"
"""


def spec(tmp_path, command, *, reps=2, extra=""):
    return write_spec(
        tmp_path, SPEC.format(command=command, reps=reps, extra=extra, bin=marker_sleep(tmp_path))
    )


def test_background_child_of_a_step_is_stopped_at_the_run_end(tmp_path):
    s = spec(tmp_path, "{bin} 333 & echo started")
    db = tmp_path / "p.db"
    r = perflab("run", str(s), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert gone(Path(f"marker-sleep-{os.getpid()}-{tmp_path.name}"))
    # recorded with the run, and said once
    shown = perflab("show", "last", "--run", "1", "--store", str(db))
    assert "leftovers" in shown.out and "marker-sleep" in shown.out
    assert r.err.count("left 1 process(es) running") == 1


def test_daemon_that_detaches_is_stopped_too(tmp_path):
    # double fork + setsid: the daemon leaves the step's session and process group
    daemon = (
        "python3 -c 'import os,sys; os.fork() and sys.exit(0); os.setsid(); os.fork() and sys.exit(0); "
        'os.execv(sys.argv[1], [sys.argv[1], \\"334\\"])\' {bin}'
    )
    s = spec(tmp_path, daemon)
    r = perflab("run", str(s), "--store", str(tmp_path / "p.db"), "--no-compare")
    assert r.code == 0, r.err
    assert gone(Path(f"marker-sleep-{os.getpid()}-{tmp_path.name}"))


def test_before_all_server_lives_through_the_runs_and_stops_at_the_end(tmp_path):
    marker = f"marker-sleep-{os.getpid()}-{tmp_path.name}"
    # every run checks that the before_all process is still there
    s = spec(tmp_path, f"pgrep -f {marker} >/dev/null", extra='before_all = "{bin} 335 &"')
    r = perflab("run", str(s), "--store", str(tmp_path / "p.db"), "--no-compare")
    assert r.code == 0, r.err
    assert gone(Path(marker))


def test_timeout_sends_sigterm_then_sigkill_after_kill_grace(tmp_path):
    flag = tmp_path / "got-term"
    # one process exits cleanly on SIGTERM (and says so); another ignores it and needs SIGKILL
    command = (
        f"trap 'echo term > {flag}; exit 0' TERM; "
        "(trap '' TERM; exec {bin} 336) & {bin} 337 & wait"
    )
    s = spec(
        tmp_path, command, reps=1, extra='timeout = "500ms"\nkill_grace = "300ms"\nmax_failures = 0'
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(s), "--store", str(db), "--no-compare")
    assert r.code == 1
    assert flag.read_text().strip() == "term"  # SIGTERM came first
    assert gone(Path(f"marker-sleep-{os.getpid()}-{tmp_path.name}"))
    con = sqlite3.connect(db)
    assert {x for (x,) in con.execute("SELECT status FROM runs")} == {"timeout"}
    con.close()


def test_kill_grace_bounds_the_wait_for_a_process_ignoring_sigterm(tmp_path):
    bin_ = marker_sleep(tmp_path)
    for grace in (0.2, 1.5):
        t0 = time.monotonic()
        command = f"trap '' TERM; {bin_} 30"
        out, err = tmp_path / "o", tmp_path / "e"
        result = run_process(
            StepRequest(command, tmp_path, out, err, os.environ, timeout=0.1, kill_grace=grace)
        )
        took = time.monotonic() - t0
        assert result.timed_out and result.signal == signal.SIGKILL
        assert took >= 0.1 + grace  # it waited the whole grace before SIGKILL
        assert gone(bin_)


def perflab_in_a_step(tmp_path):
    """perflab running an experiment whose step is in flight with two processes: (process,
    spec, store, the marker its processes carry)."""
    s = spec(tmp_path, "{bin} 338 & {bin} 339", reps=2)
    db = tmp_path / "p.db"
    p = perflab_process("run", str(s), "--store", str(db), "--no-compare")
    marker = Path(f"marker-sleep-{os.getpid()}-{tmp_path.name}")
    wait_until(lambda: len(live(marker)) >= 2)
    return p, s, db, marker


def test_sigterm_to_perflab_stops_the_step_and_its_children(tmp_path):
    p, _, db, marker = perflab_in_a_step(tmp_path)
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert gone(marker)
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*) FROM runs WHERE status='running'").fetchone() == (0,)
    con.close()


def test_sigkill_of_perflab_still_stops_the_step_and_the_next_start_cleans_its_scratch(tmp_path):
    p, _s, _db, marker = perflab_in_a_step(tmp_path)
    scratch = wait_until(lambda: list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{p.pid}-*")))
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    # the kernel tells each step's perflab-exec that its parent died; it stops everything
    assert gone(marker)
    assert all(d.exists() for d in scratch)  # a SIGKILLed perflab could not remove it
    # the next perflab to start (any experiment) removes the dead one's scratch folder
    other = tmp_path / "other"
    other.mkdir()
    quick = write_spec(other, SPEC.format(command="true", reps=1, extra="", bin="true"))
    r = perflab("run", str(quick), "--store", str(tmp_path / "other.db"), "--no-compare")
    assert r.code == 0, r.err
    assert not any(d.exists() for d in scratch)


def test_stale_scratch_is_removed_and_live_scratch_is_kept(tmp_path):
    mine = tmp_path / f"{PREFIX}{os.getpid()}-{process_start_time(os.getpid())}-abc"
    stale = (
        tmp_path / f"{PREFIX}{os.getpid()}-1-abc"
    )  # same PID, another start time: a dead perflab
    other = tmp_path / "perflab-run-not-ours"
    for d in (mine, stale, other):
        d.mkdir()
        (d / "f").write_text("x")
    assert remove_stale_scratch(tmp_path) == [stale]
    assert mine.exists() and other.exists() and not stale.exists()


def test_commands_start_with_default_signal_dispositions(tmp_path):
    # Python ignores SIGPIPE, and an ignored signal stays ignored across exec: a command must
    # not inherit that (`yes | head` would spin on EPIPE). grep reports its own ignored set.
    command = "grep SigIgn /proc/self/status"
    result = run_process(
        StepRequest(command, tmp_path, tmp_path / "o", tmp_path / "e", os.environ, shell=False)
    )
    assert result.ok
    ignored = int((tmp_path / "o").read_text().split()[1], 16)
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # the harness does ignore it
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))


def test_the_shim_stops_the_step_when_its_watched_descriptor_ends(tmp_path):
    """`perflab-exec -W FD` (how a step on a host over SSH learns that perflab is gone: the
    session's stdin ends): when the other end of FD closes, the command and everything it
    started are stopped; FD itself does not reach the command."""
    from perflab.hosts.process import exec_shim

    shim = exec_shim()
    assert shim is not None, "scripts/setup installs the perflab-exec shim"
    sleeper = marker_sleep(tmp_path)
    watched, holder = os.pipe()
    report_r, report_w = os.pipe()
    fds = tmp_path / "fds"
    command = f"ls /proc/$$/fd > {fds}; {sleeper} 31 & {sleeper} 32; wait"
    p = subprocess.Popen(
        [shim, str(report_w), "500", "-W", str(watched), "sh", "-c", command],
        pass_fds=(watched, report_w),
    )
    os.close(watched)
    os.close(report_w)
    try:
        wait_until(lambda: fds.exists() and len(live(sleeper)) >= 4)  # shim, sh, two sleeps
        assert str(watched) not in fds.read_text().split()
        assert p.poll() is None  # the descriptor still open: the step runs on
        os.close(holder)
        assert p.wait(timeout=30) == -signal.SIGTERM or p.returncode == 128 + signal.SIGTERM
        assert gone(sleeper)
        assert os.read(report_r, 200).decode().split()[4] == str(signal.SIGTERM)  # its status
    finally:
        p.kill()
        p.wait()
        os.close(report_r)
