"""One step on a remote host: the ssh process that carries it, how its report line is read
(the native shim's, or the portable sh path's), its stop, its output fetched into the
run's record, and the processes it left held there until its scope ends."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perflab.hosts.process import ProcessResult, parse_report, process_result
from perflab.hosts.sh_step import parse_sh_report
from perflab.hosts.ssh import HostError, SshConnection

#: Extra seconds, beyond ``kill_grace``, for the shim to finish its clean-up and answer.
STOP_MARGIN_S = 5.0


@dataclass(frozen=True)
class ReportedStep:
    """A step's report line, read: its result, and whether it left processes held there."""

    result: ProcessResult
    lingering: bool


#: A report line read into a `ReportedStep` (None: not a report); the second argument is
#: the wall time measured here, for a host whose clock gave none.
ReportParser = Callable[[bytes, float], "ReportedStep | None"]


def shim_result(line: bytes, wall: float) -> ReportedStep | None:
    report = parse_report(line)
    if report is None:
        return None
    result = process_result(report, None, None, 0.0, False, False, None)
    return ReportedStep(result, report.lingering)


def sh_result(line: bytes, wall: float) -> ReportedStep | None:
    report = parse_sh_report(line)
    if report is None:
        return None
    code = os.waitstatus_to_exitcode(report.wait_status)
    result = ProcessResult(
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        timed_out=False,
        interrupted=False,
        wall_s=wall if report.wall_s is None else report.wall_s,
        user_s=report.user_s,
        system_s=report.system_s,
        max_rss_kib=None,
        measured_by=report.measured_by(),
    )
    return ReportedStep(result, report.lingering)


class RemoteStep:
    """One command on the host: the ssh process that carries it, and its scratch directory."""

    def __init__(self, conn: SshConnection, scratch: str, grace: float, token: str) -> None:
        self.conn, self.scratch, self.grace = conn, scratch, grace
        self.token = token  # the portable path's marker of the step's processes
        self.portable = False  # measured by the portable sh path (`sh_step.py`)
        self.proc: subprocess.Popen[bytes] | None = None
        self.report = b""

    def wait(
        self,
        script: str,
        timeout: float | None,
        stop: threading.Event | None,
        parse: ReportParser,
    ) -> ProcessResult:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.conn.argv(script),
            stdin=subprocess.PIPE,  # held open until the step ends (the shim's -W 4)
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        timed_out = interrupted = False
        deadline = None if timeout is None else t0 + timeout
        while b"\n" not in self.report:
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.perf_counter()))
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    break  # the session ended without a report: connection lost, or shim failed
                self.report += chunk
                continue
            if stop is not None and stop.is_set():
                interrupted = True
            elif deadline is not None and time.perf_counter() >= deadline:
                timed_out = True
            if interrupted or timed_out:
                self.terminate()
                break
        parsed = parse(self.report, time.perf_counter() - t0)
        if parsed is not None and not (timed_out or interrupted):
            result, left = parsed.result, parsed.lingering
            if not left:
                self._reap()
                return result
            return dataclasses.replace(result, lingering=RemoteLingering(self))
        self._reap()
        if not (timed_out or interrupted):
            why = self._stderr() or f"ssh exited with status {self.proc.returncode}"
            raise HostError(f"host {self.conn.host.describe()}: step lost: {why}")
        return ProcessResult(
            exit_code=None,
            signal=None,
            timed_out=timed_out,
            interrupted=interrupted,
            wall_s=time.perf_counter() - t0,
            user_s=0.0,
            system_s=0.0,
            max_rss_kib=None,
        )

    def terminate(self) -> None:
        """SIGTERM to the shim (it stops everything the step started, with its grace); then,
        if it is still there, SIGKILL to its process group."""
        pid = f"$(cat {self.scratch}/pid 2>/dev/null)"
        with contextlib.suppress(HostError):
            self.conn.run(f'p={pid}; [ -n "$p" ] && kill -TERM "$p"', check=False, timeout=30)
        if self.proc is not None:
            try:
                self.proc.wait(self.grace + STOP_MARGIN_S)
                return
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(HostError):
            self.conn.run(
                f'p={pid}; [ -n "$p" ] && {{ kill -KILL -- -"$p" || kill -KILL "$p"; }}',
                check=False,
                timeout=30,
            )
        self._reap()

    def _reap(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(STOP_MARGIN_S + self.grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _stderr(self) -> str:
        if self.proc is None or self.proc.stderr is None or self.proc.stderr.closed:
            return ""
        lines = self.proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def fetch(self, stdout_path: Path, stderr_path: Path, remove: bool) -> None:
        """The command's output into the run's files; the scratch directory removed if
        ``remove``."""
        q = shlex.quote(self.scratch)
        with (
            open(stdout_path, "wb") as out,
            open(stderr_path, "wb") as err,
            contextlib.suppress(OSError, subprocess.TimeoutExpired),
        ):
            subprocess.run(
                self.conn.argv(f"cat {q}/out 2>/dev/null; cat {q}/err >&2 2>/dev/null; true"),
                check=False,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                timeout=120,
            )
        if remove:
            with contextlib.suppress(HostError):
                self.conn.run(f"rm -rf {q}", check=False)


class RemoteLingering:
    """Processes a remote step left running, held by its shim on the host; ``stop()``
    ends them all (the `process.Lingering` interface)."""

    def __init__(self, step: RemoteStep) -> None:
        self.step = step

    def processes(self) -> list[str]:
        """``PID command line`` of each process the step left on the host."""
        s, token = self.step.scratch, self.step.token
        # the processes that carry the portable path's marker, or the shim's children
        pids = (
            f"for f in $(grep -l -z -x -F PERFLAB_STEP={token} /proc/[0-9]*/environ); do "
            'f=${f#/proc/}; echo "${f%/environ}"; done'
            if self.step.portable
            else f"p=$(cat {s}/pid) && cat /proc/$p/task/$p/children"
        )
        script = (
            f"for c in $({{ {pids}; }} 2>/dev/null); do "
            'echo "$c $(tr "\\0" " " < /proc/$c/cmdline)"; done'
        )
        with contextlib.suppress(HostError):
            out = self.step.conn.run(script, check=False).stdout.decode("utf-8", "replace")
            return [line.strip() for line in out.splitlines() if len(line.split()) > 1]
        return []

    def stop(self) -> list[str]:
        running = self.processes()
        self.step.terminate()
        with contextlib.suppress(HostError):
            self.step.conn.run(f"rm -rf {shlex.quote(self.step.scratch)}", check=False)
        return running
