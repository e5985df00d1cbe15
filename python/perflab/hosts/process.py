"""Running one command: own session, rusage, timeout, clean stop, nothing left behind.

The command is started through ``perflab-exec`` (crates/exec), a small native shim
that forks it, times it and reports its rusage: from the Python process directly,
``ru_maxrss`` could never be lower than the harness's own memory. The shim is also a
child subreaper in a session of its own, so it holds every process the command leaves
behind (daemons included) until the step's scope ends, then stops them all (see
`Lingering`). It is started with posix_spawn (no Python between fork and exec); a pidfd
and the shim's report pipe let the wait honour a timeout and a stop request without
polling the process table.
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from perflab.hosts.proc_text import parse_pid_stat

if TYPE_CHECKING:
    import resource

    from perflab.hosts.step import StepRequest


class HeldProcesses(Protocol):
    """What a step left running, held until its scope ends: `Lingering` here,
    `perflab.hosts.remote_step.RemoteLingering` on a host. ``stop()`` ends them all."""

    def processes(self) -> list[str]: ...

    def stop(self) -> list[str]: ...


#: A local step's record without the shim: wait4's figures, whose max RSS can be perflab's
#: own (a child inherits its parent's high-water mark), and no holder for what it leaves.
FALLBACK_MEASUREMENT = "wait4 without perflab-exec (max RSS may be perflab's own)"


@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one command.

    wall_s: monotonic seconds from just before spawn to the reaped exit.
    user_s/system_s: CPU seconds of the process and the descendants it waited for.
    max_rss_kib: peak resident set of the largest of them (KiB, from wait4); None where
        it cannot be measured (the portable path of `sh_step.py`).
    measured_by: how these figures were taken, for the step's record.
    exit_code: the exit status, or None when killed by a signal (see ``signal``).
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    interrupted: bool
    wall_s: float
    user_s: float
    system_s: float
    max_rss_kib: int | None
    lingering: HeldProcesses | None = None  # processes the command left running: stop() them
    measured_by: str = "perflab-exec"

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


def installed_program(name: str) -> Path | None:
    """A program scripts/setup builds into the package (``perflab/_bin/NAME``), if there."""
    path = Path(__file__).resolve().parent.parent / "_bin" / name
    return path if os.access(path, os.X_OK) else None


def exec_shim() -> str | None:
    """Path of the perflab-exec measurement shim installed by scripts/setup, if present."""
    path = installed_program("perflab-exec")
    return None if path is None else str(path)


def run_process(request: StepRequest) -> ProcessResult:
    """Run the request's command here to completion (or timeout/stop), output to its files.

    The command starts in a session of its own. On a timeout or a stop request, everything
    it started gets SIGTERM, ``kill_grace`` seconds, then SIGKILL. When it exits by itself
    but left processes running, they are handed back as ``ProcessResult.lingering`` for the
    caller to stop when the step's scope ends (the run, or the experiment for before_all).

    cpus: CPU affinity of the command (inherited by everything it starts).
    on_start(pid) is called once the child exists (e.g. to record it for crash recovery).
    Raises FileNotFoundError/PermissionError when the program cannot be executed, and
    ValueError for an empty command line (``shell = false``).
    """
    argv = spawn_argv(request.command, request.shell)
    grace = request.kill_grace
    program = _which(argv[0], request.env)
    shim = exec_shim()
    pid, t0, report_r = _spawn(program, argv, shim, request)
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except OSError:  # very old kernel: fall back to polling below
        pidfd = None
    if request.on_start:
        request.on_start(pid)
    waiter = _Waiter(pid, pidfd, report_r)
    lingering = None
    status = ru = None
    deadline = None if request.timeout is None else t0 + request.timeout
    try:
        timed_out, interrupted = _wait_for_end(waiter, pid, pidfd, deadline, request.stop, grace)
        report = waiter.report()
        if (
            report is not None
            and report.lingering
            and not (timed_out or interrupted or waiter.exited)
        ):
            lingering = Lingering(pid, pidfd, grace)  # the shim holds what the command left
            pidfd = None  # the Lingering owns it now
        else:
            _, status, ru = os.wait4(pid, 0)
            report = report or waiter.report()
        t1 = time.perf_counter()
    except BaseException:
        _terminate(pid, pidfd, grace)
        with contextlib.suppress(ChildProcessError):
            os.wait4(pid, 0)
        raise
    finally:
        if pidfd is not None:
            os.close(pidfd)
        waiter.close()
    if shim is None:
        # Without the shim nothing holds what the command left: its session's group goes now.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    return process_result(report, status, ru, t1 - t0, timed_out, interrupted, lingering)


@dataclass(frozen=True)
class ShimReport:
    """perflab-exec's report of the command it ran."""

    wall_s: float
    user_s: float
    system_s: float
    max_rss_kib: int
    wait_status: int  # as wait(2) gives it
    lingering: bool  # processes the command left are held by the shim


def parse_report(data: bytes) -> ShimReport | None:
    """perflab-exec's line ``wall_ns user_us system_us maxrss_kib wait_status lingering``;
    None if incomplete."""
    try:
        wall_ns, user_us, sys_us, rss, status, lingering = (int(x) for x in data.split())
    except ValueError:
        return None
    return ShimReport(wall_ns / 1e9, user_us / 1e6, sys_us / 1e6, rss, status, bool(lingering))


def process_result(
    report: ShimReport | None,
    status: int | None,
    ru: resource.struct_rusage | None,
    wall: float,
    timed_out: bool,
    interrupted: bool,
    lingering: HeldProcesses | None,
) -> ProcessResult:
    """The outcome: the shim's report when there is one (its figures are the command's own),
    else wait4's status and rusage with the wall time measured here."""
    if report is not None:
        wall_s, user_s, system_s = report.wall_s, report.user_s, report.system_s
        max_rss, status = report.max_rss_kib, report.wait_status
    else:
        assert ru is not None and status is not None
        wall_s, user_s, system_s, max_rss = wall, ru.ru_utime, ru.ru_stime, int(ru.ru_maxrss)
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
        lingering=lingering,
        measured_by="perflab-exec" if report is not None else FALLBACK_MEASUREMENT,
    )


def _spawn(
    program: str, argv: list[str], shim: str | None, request: StepRequest
) -> tuple[int, float, int | None]:
    """Start the command (through the shim when it is installed) in a session of its own:
    (pid, perf_counter just before the spawn, read end of the shim's report pipe)."""
    report_r = report_w = None
    cwd = request.cwd
    with (
        open(request.stdout_path, "wb") as out,
        open(request.stderr_path, "wb") as err,
        open(os.devnull, "rb") as devnull,
    ):
        actions = [
            (os.POSIX_SPAWN_DUP2, devnull.fileno(), 0),
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
        ]
        if shim is not None:
            report_r, report_w = os.pipe()
            actions.append((os.POSIX_SPAWN_DUP2, report_w, 3))
            grace_ms = str(max(1, round(request.kill_grace * 1000)))
            # the shim switches to cwd itself: this process's cwd is shared by its threads
            spawn_path = shim
            spawn_argv_ = [shim, "3", grace_ms, "-C", str(cwd), program, *argv[1:]]
        else:
            spawn_path, spawn_argv_ = program, argv
        if not cwd.is_dir():
            raise FileNotFoundError(f"no such directory: {cwd}")
        try:
            with _chdir(cwd if shim is None else None), _affinity(request.cpus):
                t0 = time.perf_counter()
                pid = os.posix_spawn(
                    spawn_path,
                    spawn_argv_,
                    dict(request.env),
                    file_actions=actions,
                    setsid=True,
                    setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                )
        finally:
            if report_w is not None:
                os.close(report_w)
    return pid, t0, report_r


def _wait_for_end(
    waiter: _Waiter,
    pid: int,
    pidfd: int | None,
    deadline: float | None,
    stop: threading.Event | None,
    kill_grace: float,
) -> tuple[bool, bool]:
    """Wait until the command is done; a stop request or the deadline stops it first.
    Returns (timed_out, interrupted)."""
    while not waiter.done():
        now = time.perf_counter()
        waiter.wait(0.1 if deadline is None else max(0.0, min(0.1, deadline - now)))
        if waiter.done():
            break
        if stop is not None and stop.is_set():
            _terminate(pid, pidfd, kill_grace)
            return False, True
        if deadline is not None and time.perf_counter() >= deadline:
            _terminate(pid, pidfd, kill_grace)
            return True, False
    return False, False


class _Waiter:
    """Waits for the shim's report line (the command exited) or the shim's own exit."""

    def __init__(self, pid: int, pidfd: int | None, report_fd: int | None):
        self.pid, self.pidfd, self.report_fd = pid, pidfd, report_fd
        self.data = b""
        self.report_eof = report_fd is None
        self.exited = False
        self.poller = select.poll()
        if pidfd is not None:
            self.poller.register(pidfd, select.POLLIN)
        if report_fd is not None:
            self.poller.register(report_fd, select.POLLIN)

    def done(self) -> bool:
        return self.exited or (self.report_fd is not None and self.report_eof)

    def wait(self, timeout: float) -> None:
        if self.pidfd is None:  # no pidfd: poll the process table
            self.exited = _wait_exit(self.pid, None, timeout)
            if self.exited:
                self._drain()
            return
        for fd, _ in self.poller.poll(timeout * 1000):
            if fd == self.pidfd:
                self.exited = True
                self._drain()
            elif fd == self.report_fd and not self.report_eof:
                self._read()

    def _read(self) -> None:
        assert self.report_fd is not None
        chunk = os.read(self.report_fd, 256)
        if chunk:
            self.data += chunk
        else:
            self.report_eof = True
            self.poller.unregister(self.report_fd)

    def _drain(self) -> None:
        """The shim exited, so its end of the pipe is closed: read to the end."""
        while not self.report_eof:
            self._read()

    def report(self) -> ShimReport | None:
        """The shim's line ``wall_ns user_us system_us maxrss_kib wait_status lingering``."""
        if self.report_fd is None:
            return None
        if self.exited:
            self._drain()
        return parse_report(self.data)

    def close(self) -> None:
        if self.report_fd is not None:
            os.close(self.report_fd)
            self.report_fd = None


class Lingering:
    """Processes a step left running after its command exited, held by its perflab-exec
    (a child subreaper: daemons that detached are among them). ``stop()`` ends them all."""

    def __init__(self, pid: int, pidfd: int | None, grace: float):
        self.pid, self.pidfd, self.grace = pid, pidfd, grace

    def processes(self) -> list[str]:
        """``PID command line`` of each process the step left (the shim's children); zombies
        (exited, not yet reaped by the shim) are left out."""
        try:
            pids = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        except OSError:
            return []
        return [f"{p} {cmd}" for p in pids if (cmd := _command_line(int(p)))]

    def stop(self) -> list[str]:
        """SIGTERM them, ``grace`` seconds, SIGKILL the rest; reap the shim. Returns what was
        running just before (``processes()``)."""
        running = self.processes()
        _terminate(self.pid, self.pidfd, self.grace)
        with contextlib.suppress(ChildProcessError):
            os.wait4(self.pid, 0)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        return running


def _command_line(pid: int, settle: float = 0.5) -> str | None:
    """A live process's command line; None for a zombie or a process gone.

    A process caught inside execve has an empty command line for a moment (the new image's
    arguments are not in place yet): wait for them, bounded by ``settle`` seconds, then
    fall back to its name as ``[comm]``."""
    end = time.monotonic() + settle
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        comm, _, rest = stat.partition(" (")[2].rpartition(") ")
        if rest[:1] == "Z":
            return None
        text = cmd.replace(b"\0", b" ").decode("utf-8", "replace").strip()
        if text:
            return text
        if time.monotonic() >= end:
            return f"[{comm}]"
        time.sleep(0.005)


def _which(program: str, env: Mapping[str, str]) -> str:
    if "/" in program:  # a path: relative to the command's cwd, which spawn switches to
        return program
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(f"command not found: {program}")
    return found


@contextlib.contextmanager
def _chdir(path: Path | None) -> Iterator[None]:
    """Without the shim only: posix_spawn has no cwd action before Python 3.13, so this
    process switches its own directory around the spawn — under a lock, as services and
    load processes start from threads (with the shim, it switches: ``-C``)."""
    if path is None:
        yield
        return
    with _CHDIR_LOCK:
        old = os.getcwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(old)


_CHDIR_LOCK = threading.Lock()


@contextlib.contextmanager
def _affinity(cpus: tuple[int, ...] | None) -> Iterator[None]:
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


def _terminate(pid: int, pidfd: int | None, grace: float) -> None:
    """Stop a step: SIGTERM to its shim, which stops everything the command started (SIGTERM,
    ``grace``, SIGKILL). If the shim does not exit in time (or there is none), SIGKILL the
    session's process group and its leader."""
    shim = exec_shim() is not None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        (os.kill if shim else os.killpg)(pid, signal.SIGTERM)
    if _wait_exit(pid, pidfd, grace + (5.0 if shim else 0.0)):
        return
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)
    _wait_exit(pid, pidfd, 5.0)


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), to tell PID reuse apart."""
    try:
        found = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None
    return found.start_time if found else None


def kill_leftover_group(pid: int, start_time: str | None) -> bool:
    """Kill the process group of a command a crashed runner left behind, if it is still the same process."""
    if start_time is None or process_start_time(pid) != start_time:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
        return True
    return False
