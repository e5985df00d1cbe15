"""Steps on a remote host, by the same rules as local ones (`process.py`).

Each step runs under ``perflab-exec`` staged to the host once (``~/.cache/perflab/``,
named by its content hash), so a remote step is timed, stopped and cleaned up exactly as
a local one: its own session, its rusage measured there, everything it leaves behind held
by the shim until the step's scope ends, SIGTERM then ``kill_grace`` then SIGKILL on a
timeout or a stop. The shim's report line comes back over the SSH session's stdout; the
command's stdout and stderr go to files in a scratch directory on the host and are
fetched into the run's record when the command has exited. If the connection drops, the
host's sshd ends the session and the shim (its parent gone, ``PR_SET_PDEATHSIG``) stops
everything the step started. If perflab dies, however (SIGKILL included), the session's
stdin — which perflab holds open and the shim watches — reaches its end, and the shim does
the same: the connection's control master would otherwise keep the session open.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import platform
import secrets
import select
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from perflab.run.process import (
    TERM_GRACE_S,
    ProcessResult,
    exec_shim,
    parse_report,
    process_result,
    process_start_time,
    spawn_argv,
)
from perflab.run.sh_step import STEP_SCRIPT, parse_sh_report
from perflab.run.ssh import HostError, SshConnection

#: Where staged files live on a host, under its login directory.
STAGE_DIR = ".cache/perflab"
#: Extra seconds, beyond ``kill_grace``, for the shim to finish its clean-up and answer.
STOP_MARGIN_S = 5.0


#: The host's step scratch folders: ``/tmp/perflab-step-MACHINE-PID-START-TOKEN``, named
#: after the perflab that made them (this machine, its PID and kernel start time), so that
#: the next perflab of this machine can tell the folders of a killed one from those in use.
STEP_PREFIX = "/tmp/perflab-step-"


@functools.cache
def _machine_tag() -> str:
    """This machine, in a step folder's name: a digest of its machine-id (its host name
    where it has none)."""
    try:
        ident = Path("/etc/machine-id").read_text().strip()
    except OSError:
        ident = ""
    return hashlib.sha256((ident or platform.node()).encode()).hexdigest()[:8]


def _step_folder() -> str:
    """A new step folder's path on a host (`STEP_PREFIX`)."""
    owner = f"{os.getpid()}-{process_start_time(os.getpid()) or 0}"
    return f"{STEP_PREFIX}{_machine_tag()}-{owner}-{secrets.token_hex(8)}"


class RemoteExecutor:
    """Runs commands on one SSH host (the `Executor` interface of `executor.py`).

    workdir: the directory commands start in on the host (default: the login directory);
    the ``cwd`` the runner passes is a local path and is not used here.
    """

    def __init__(self, conn: SshConnection, workdir: str | None = None, stage: bool = True) -> None:
        self.conn = conn
        self.stage_helpers = stage  # false: nothing staged, steps on the portable path
        self.host = conn.host.name
        self.workdir = workdir
        self._shim: str | None = None
        self._home: str | None = None
        self._told: str | None = None  # the last reason given for the portable path
        #: how steps are measured there: "perflab-exec" or "sh" (None: not connected yet)
        self.measurement: str | None = None
        self.machine = self.system = ""
        self.why_not_shim = ""  # why the portable path was chosen there

    def prepare(self, message: Callable[[str], None] | None = None) -> None:
        """Connects, chooses how steps are measured there (``measurement``: the native shim
        where it runs, else the portable sh path of `sh_step.py`) and stages what that needs;
        HostError naming the cause when no step can run there. Called again after every
        boot: a device that booted from a ramdisk has lost what was staged."""
        self.conn.connect()
        probe = self.conn.run('uname -m; uname -s; printf "%s\\n" "$HOME"', check=False)
        lines = probe.stdout.decode("utf-8", "replace").splitlines()
        if probe.returncode != 0 or len(lines) < 3:
            why = _last_line(probe.stderr) or f"exited with status {probe.returncode}"
            raise HostError(
                f"host {self.conn.host.describe()} cannot run a step: its shell could not run "
                f"`uname -m; uname -s`: {why}"
            )
        self.machine, self.system, self._home = (x.strip() for x in lines[:3])
        self._shim = None
        why_not = self._try_shim()
        if why_not is not None:
            self._check_sh_path(why_not)
            self.measurement = "sh"
            if message is not None and why_not != self._told:
                message(
                    f"host '{self.host}' ({self.machine}, {self.system}): steps measured by the "
                    f"portable sh path, not perflab-exec ({why_not}); max RSS is not measured there"
                )
            self._told = why_not
            self.why_not_shim = why_not
        else:
            self.measurement = "perflab-exec"
        self._remove_stale_steps()

    def _try_shim(self) -> str | None:
        """Stages the native shim and checks that it runs there; why not, or None."""
        local = exec_shim()
        if not self.stage_helpers:
            return "stage = false for this host"
        if local is None:
            return "perflab-exec is not built here (run scripts/setup)"
        if self.system != "Linux":
            return f"the host runs {self.system}, perflab-exec needs Linux"
        if self.machine != platform.machine():
            return f"the host is {self.machine}, perflab-exec is built for {platform.machine()}"
        shim = shlex.quote(self.stage(Path(local)))
        done = self.conn.run(f"{shim} 1 100 true </dev/null", check=False, timeout=30)
        if parse_report(done.stdout) is None:
            why = _last_line(done.stderr) or f"it exited with status {done.returncode}"
            return f"perflab-exec does not run there: {why}"
        self._shim = shim
        return None

    def _check_sh_path(self, why_not_shim: str) -> None:
        """Runs ``true`` through the portable path once; HostError naming both causes when
        that fails too (no step could run there)."""
        step = _RemoteStep(self.conn, _step_folder(), 0.1, secrets.token_hex(8))
        try:
            result = step.wait(self._sh_script(step, ["true"], {}), 30.0, None, _sh_result)
        except HostError as e:
            result, lost = None, e.message.rsplit(": ", 1)[-1]
        else:
            lost = ""
        finally:
            with contextlib.suppress(HostError):
                self.conn.run(f"rm -rf {shlex.quote(step.scratch)}", check=False)
        if result is None or not result.ok:
            raise HostError(
                f"host {self.conn.host.describe()} cannot run a step: {why_not_shim}, and "
                f"the portable sh path failed there ({lost or 'true did not succeed'})"
            )

    def _remove_stale_steps(self) -> None:
        """The step folders a perflab of this machine left on the host when it was killed
        (its shim stopped the step; nobody fetched the folder): removed, as the next local
        start removes the local ones (`scratch.remove_stale_scratch`). Those of a perflab
        still running, or of another machine's, stay."""
        mine = f"{STEP_PREFIX}{_machine_tag()}-"
        found = self.conn.run(f"ls -d {mine}* 2>/dev/null; true", check=False).stdout.decode()
        stale = []
        for path in found.split():
            parts = path[len(mine) :].split("-")
            if (
                len(parts) == 3
                and parts[0].isdigit()
                and process_start_time(int(parts[0])) != parts[1]
            ):
                stale.append(shlex.quote(path))
        if stale:
            self.conn.run(f"rm -rf {' '.join(stale)}", check=False)

    def stage(self, local: Path) -> str:
        """The host's copy of the local file ``local`` (a program, a script), uploaded once per
        content to ``~/.cache/perflab/NAME-HASH`` and kept executable; its path there."""
        data = local.read_bytes()
        digest = hashlib.sha256(data).hexdigest()[:16]
        remote = f"{self._home_dir()}/{STAGE_DIR}/{local.name}-{digest}"
        present = self.conn.run(f"test -x {shlex.quote(remote)} && echo yes", check=False).stdout
        if present.strip() != b"yes":
            self.conn.put(data, remote, mode="0755")
        return remote

    def _home_dir(self) -> str:
        if self._home is None:
            self._home = self.conn.run('printf %s "$HOME"').stdout.decode()
        return self._home

    def put_file(self, local: Path) -> str:
        """Copies the local file into the host's working directory (its login directory
        without one) under its own name, executable if it is here; its path there."""
        base = self.workdir or self._home_dir()
        remote = f"{base}/{local.name}"
        self.conn.put(
            local.read_bytes(), remote, mode="0755" if os.access(local, os.X_OK) else "0644"
        )
        return remote

    def fetch(self, path: str, cwd: Path, limit: int) -> bytes:
        """The file ``path`` on the host (relative to its working directory); ``cwd`` is a
        local path and not used."""
        cd = f"cd {shlex.quote(self.workdir)} && " if self.workdir else ""
        q = shlex.quote(path)
        done = self.conn.run(f"{cd}test -f {q} && head -c {limit + 1} -- {q}", check=False)
        if done.returncode != 0:
            raise FileNotFoundError(f"{path}: no such file on host '{self.host}'")
        if len(done.stdout) > limit:
            raise FileNotFoundError(f"{path}: larger than {limit:,} bytes")
        return done.stdout

    def host_access(self) -> RemoteHost:
        return RemoteHost(self.conn)

    @staticmethod
    def base_env() -> dict[str, str]:
        """Commands keep the host's own login environment; only the spec's variables are added."""
        return {}

    def run(
        self,
        command: str,
        *,
        shell: bool,
        env: Mapping[str, str],
        cwd: Path,
        stdout_path: Path,
        stderr_path: Path,
        timeout: float | None = None,
        stop: threading.Event | None = None,
        on_start: Callable[[int], None] | None = None,
        cpus: tuple[int, ...] | None = None,
        kill_grace: float = TERM_GRACE_S,
    ) -> ProcessResult:
        if self.measurement is None:
            self.prepare()
        argv = spawn_argv(command, shell)
        if cpus:
            argv = ["taskset", "-c", ",".join(map(str, cpus)), *argv]
        step = _RemoteStep(self.conn, _step_folder(), kill_grace, secrets.token_hex(8))
        if self._shim is not None:
            script, parse = self._shim_script(step, argv, env), _shim_result
        else:
            script, parse = self._sh_script(step, argv, env), _sh_result
            step.portable = True
        result: ProcessResult | None = None
        try:
            result = step.wait(script, timeout, stop, parse)
        finally:
            # A step that left processes keeps its scratch directory (their shim's pid)
            # until they are stopped.
            step.fetch(stdout_path, stderr_path, remove=result is None or result.lingering is None)
        return result

    def _cd(self) -> str:
        return f"cd {shlex.quote(self.workdir)} && " if self.workdir else ""

    def _shim_script(self, step: _RemoteStep, argv: list[str], env: Mapping[str, str]) -> str:
        # The shim watches the session's stdin (fd 4), which perflab holds open and never
        # writes to: end-of-file there means perflab is gone, however it died (its ssh
        # client may live on, and the session with it), and the step is stopped.
        grace_ms = max(1, round(step.grace * 1000))
        d = step.scratch
        return (
            f"mkdir -p {d} && echo $$ > {d}/pid && {self._cd()}"
            f"exec env {_assignments(env)} {self._shim} 3 {grace_ms} -W 4 "
            + " ".join(shlex.quote(a) for a in argv)
            + f" 4<&0 3>&1 1>{d}/out 2>{d}/err </dev/null"
        )

    def _sh_script(self, step: _RemoteStep, argv: list[str], env: Mapping[str, str]) -> str:
        grace_ds = max(1, round(step.grace * 10))
        return (
            f"{self._cd()}exec env {_assignments(env)} sh -c {shlex.quote(STEP_SCRIPT)} "
            f"perflab-step {step.scratch} {grace_ds} {step.token} "
            + " ".join(shlex.quote(a) for a in argv)
        )


def _assignments(env: Mapping[str, str]) -> str:
    return " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())


#: A report line read into (the step's result, whether it left processes held there);
#: the second argument is the wall time measured here, for a host whose clock gave none.
ReportParser = Callable[[bytes, float], "tuple[ProcessResult, bool] | None"]


def _shim_result(line: bytes, wall: float) -> tuple[ProcessResult, bool] | None:
    report = parse_report(line)
    if report is None:
        return None
    return process_result(report, None, None, 0.0, False, False, None), bool(report[5])


def _sh_result(line: bytes, wall: float) -> tuple[ProcessResult, bool] | None:
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
    return result, report.lingering


def _last_line(data: bytes) -> str:
    lines = [x.strip() for x in data.decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1][:200] if lines else ""


class _RemoteStep:
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
            result, left = parsed
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

    def __init__(self, step: _RemoteStep) -> None:
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


class RemoteHost:
    """`perflab.run.host_access.HostAccess` over SSH, for environment capture: each call
    is one command on the host's shared connection; nothing raises."""

    def __init__(self, conn: SshConnection) -> None:
        self.conn = conn
        self.name = conn.host.name

    def read_file(self, path: str) -> bytes | None:
        try:
            done = self.conn.run(f"cat {shlex.quote(path)}", check=False, timeout=30)
        except HostError:
            return None
        return done.stdout if done.returncode == 0 else None

    def run(self, argv: list[str], timeout: float) -> tuple[int, str] | None:
        command = " ".join(shlex.quote(a) for a in argv)
        # Version and lscpu texts in English; the host's timeout(1) ends a hung tool there.
        script = f"LC_ALL=C LANG=C timeout -s KILL {timeout:g} {command} 2>&1 </dev/null"
        try:
            done = self.conn.run(script, check=False, timeout=timeout + 30)
        except HostError:
            return None
        if done.returncode in (126, 127, 137):  # not runnable, not installed, timed out
            return None
        return done.returncode, done.stdout.decode("utf-8", errors="replace")
