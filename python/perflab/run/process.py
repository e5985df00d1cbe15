"""Running one command: own process group, rusage, timeout, clean stop.

The command is started through ``perflab-exec`` (crates/exec), a small native shim
that forks it, times it and reports its rusage: from the Python process directly,
``ru_maxrss`` could never be lower than the harness's own memory. The shim is started
with posix_spawn (no Python between fork and exec); a pidfd lets the wait honour a
timeout and a stop request without polling the process table.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

#: How long a process group gets between SIGTERM and SIGKILL.
TERM_GRACE_S = 2.0


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one command.

    wall_s: monotonic seconds from just before spawn to the reaped exit.
    user_s/system_s: CPU seconds of the process and the descendants it waited for.
    max_rss_kib: peak resident set of the largest of them (KiB, from wait4).
    exit_code: the exit status, or None when killed by a signal (see ``signal``).
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    interrupted: bool
    wall_s: float
    user_s: float
    system_s: float
    max_rss_kib: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.interrupted

    def describe_failure(self) -> str:
        if self.timed_out:
            return "timed out"
        if self.interrupted:
            return "interrupted"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return f"killed by {name}"
        return f"exited with status {self.exit_code}"


def spawn_argv(command: str, shell: bool) -> list[str]:
    if shell:
        return ["/bin/sh", "-c", command]
    argv = shlex.split(command)
    if not argv:
        raise ValueError("empty command")
    return argv


def exec_shim() -> str | None:
    """Path of the perflab-exec measurement shim installed by scripts/setup, if present."""
    path = Path(__file__).resolve().parent.parent / "_bin" / "perflab-exec"
    return str(path) if os.access(path, os.X_OK) else None


def run_process(argv: list[str], *, env: Mapping[str, str], cwd: Path, stdout_path: Path,
                stderr_path: Path, timeout: float | None = None,
                stop: threading.Event | None = None,
                on_start: Callable[[int], None] | None = None,
                cpus: tuple[int, ...] | None = None) -> ProcessResult:
    """Run ``argv`` to completion (or timeout/stop), output to the given files.

    cpus: CPU affinity of the command (inherited by everything it starts).

    on_start(pid) is called once the child exists (e.g. to record it for crash recovery).
    Raises FileNotFoundError/PermissionError when the program cannot be executed.
    """
    program = _which(argv[0], env)
    shim = exec_shim()
    report_r = report_w = None
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err, \
            open(os.devnull, "rb") as devnull:
        actions = [(os.POSIX_SPAWN_DUP2, devnull.fileno(), 0),
                   (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                   (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
        if shim is not None:
            report_r, report_w = os.pipe()
            actions.append((os.POSIX_SPAWN_DUP2, report_w, 3))
            spawn_path, spawn_argv_ = shim, [shim, "3", program, *argv[1:]]
        else:
            spawn_path, spawn_argv_ = program, argv
        try:
            with _chdir(cwd), _affinity(cpus):
                t0 = time.perf_counter()
                pid = os.posix_spawn(spawn_path, spawn_argv_, dict(env), file_actions=actions,
                                     setpgroup=0)
        finally:
            if report_w is not None:
                os.close(report_w)
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # very old kernel: fall back to polling below
        pidfd = None
    if on_start:
        on_start(pid)
    timed_out = interrupted = False
    deadline = None if timeout is None else t0 + timeout
    try:
        while True:
            now = time.perf_counter()
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - now))
            if _wait_exit(pid, pidfd, wait):
                break
            if stop is not None and stop.is_set():
                interrupted = True
                _kill_group(pid, pidfd)
                break
            if deadline is not None and time.perf_counter() >= deadline:
                timed_out = True
                _kill_group(pid, pidfd)
                break
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter()
    except BaseException:
        _kill_group(pid, pidfd)
        with contextlib.suppress(ChildProcessError):
            os.wait4(pid, 0)
        raise
    finally:
        if pidfd is not None:
            os.close(pidfd)
        report = _read_report(report_r) if report_r is not None else None
    if timed_out or interrupted:
        # Whatever the command left behind in its group goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    if report is not None:  # the shim's figures are the command's own
        wall_s, user_s, system_s, max_rss, status = report
    else:
        wall_s, user_s, system_s, max_rss = t1 - t0, ru.ru_utime, ru.ru_stime, int(ru.ru_maxrss)
    code = os.waitstatus_to_exitcode(status)
    return ProcessResult(
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        timed_out=timed_out,
        interrupted=interrupted,
        wall_s=wall_s,
        user_s=user_s,
        system_s=system_s,
        max_rss_kib=max_rss,
    )


def _read_report(fd: int) -> tuple[float, float, float, int, int] | None:
    """The shim's line ``wall_ns user_us system_us maxrss_kib wait_status``; None if absent."""
    try:
        with os.fdopen(fd, "rb") as f:
            parts = f.read(256).split()
        wall_ns, user_us, sys_us, rss, status = (int(x) for x in parts)
    except (ValueError, OSError):
        return None
    return wall_ns / 1e9, user_us / 1e6, sys_us / 1e6, rss, status


def _which(program: str, env: Mapping[str, str]) -> str:
    if "/" in program:  # a path: relative to the command's cwd, which spawn switches to
        return program
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(f"command not found: {program}")
    return found


@contextlib.contextmanager
def _chdir(path: Path):
    # posix_spawn has no cwd action before Python 3.13; the runner is single-threaded
    # around spawns, so switching the parent's cwd for the duration is safe.
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def _affinity(cpus: tuple[int, ...] | None):
    # Like the cwd: set on the (single-threaded) parent around the spawn, so the child inherits it.
    if not cpus:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def _wait_exit(pid: int, pidfd: int | None, timeout: float) -> bool:
    """True once the child has exited (not reaped), waiting at most ``timeout`` seconds."""
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    end = time.perf_counter() + timeout
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None:
            return True
        if time.perf_counter() >= end:
            return False
        time.sleep(0.005)


def _kill_group(pid: int, pidfd: int | None) -> None:
    """SIGTERM the process group, then SIGKILL it if the leader outlives the grace period."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        if _wait_exit(pid, pidfd, grace):
            return


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), to tell PID reuse apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def kill_leftover_group(pid: int, start_time: str | None) -> bool:
    """Kill the process group of a command a crashed runner left behind, if it is still the same process."""
    if start_time is None or process_start_time(pid) != start_time:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
        return True
    return False
