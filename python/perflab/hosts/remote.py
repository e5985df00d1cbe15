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

Where the shim cannot run (another architecture or OS, or ``stage = false``), the same
rules hold through the portable sh path (`sh_step.py`); which one a host gets is chosen
once, at connect (`RemoteHost.prepare`). One step's ssh process, stop and output are
`remote_step.py`'s.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import platform
import secrets
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from perflab.hosts.base import Queried, output_tail
from perflab.hosts.process import (
    ProcessResult,
    exec_shim,
    parse_report,
    process_start_time,
    spawn_argv,
)
from perflab.hosts.remote_step import RemoteStep, sh_result, shim_result
from perflab.hosts.sh_step import STEP_SCRIPT
from perflab.hosts.ssh import HostError, SshConnection
from perflab.hosts.step import StepRequest

#: Where staged files live on a host, under its login directory.
STAGE_DIR = ".cache/perflab"


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


class RemoteHost:
    """A machine over SSH (a `perflab.hosts.base.Host`): any CPU architecture with a POSIX
    shell, OpenSSH or dropbear.

    workdir: the directory commands start in on the host (default: the login directory);
    the ``cwd`` the runner passes is a local path and is not used here.
    """

    def __init__(self, conn: SshConnection, workdir: str | None = None, stage: bool = True) -> None:
        self.conn = conn
        self.stage_helpers = stage  # false: nothing staged, steps on the portable path
        self.name = conn.host.name
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
            why = output_tail(probe.stderr) or f"exited with status {probe.returncode}"
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
                    f"host '{self.name}' ({self.machine}, {self.system}): steps measured by the "
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
            why = output_tail(done.stderr) or f"it exited with status {done.returncode}"
            return f"perflab-exec does not run there: {why}"
        self._shim = shim
        return None

    def _check_sh_path(self, why_not_shim: str) -> None:
        """Runs ``true`` through the portable path once; HostError naming both causes when
        that fails too (no step could run there)."""
        step = RemoteStep(self.conn, _step_folder(), 0.1, secrets.token_hex(8))
        try:
            result = step.wait(self._sh_script(step, ["true"], {}), 30.0, None, sh_result)
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
            raise FileNotFoundError(f"{path}: no such file on host '{self.name}'")
        if len(done.stdout) > limit:
            raise FileNotFoundError(f"{path}: larger than {limit:,} bytes")
        return done.stdout

    # -- reads (`perflab.hosts.base.Reader`): one command each on the shared connection;
    #    nothing raises, and a host that is down answers None at once
    def read_file(self, path: str) -> bytes | None:
        try:
            done = self.conn.run(f"cat {shlex.quote(path)}", check=False, timeout=30)
        except HostError:
            return None
        return done.stdout if done.returncode == 0 else None

    def list_dir(self, path: str) -> list[str] | None:
        result = self.query(["ls", "-1A", "--", path], 10.0)
        if result is None or result.status != 0:
            return None
        return [line for line in result.output.splitlines() if line]

    def query(self, argv: list[str], timeout: float) -> Queried | None:
        command = " ".join(shlex.quote(a) for a in argv)
        # Version and lscpu texts in English; a watchdog of the host's own shell ends a hung
        # tool there (no timeout(1) needed: OpenWrt's busybox may lack it, old ones differ).
        limit = max(1, math.ceil(timeout))
        script = (
            "LC_ALL=C LANG=C; export LC_ALL LANG; "
            f"{command} 2>&1 </dev/null & p=$!; "
            f"( trap 'kill $t; exit' TERM; sleep {limit} & t=$!; wait $t; kill -KILL $p ) "
            ">/dev/null 2>&1 </dev/null & w=$!; "
            "wait $p; s=$?; kill $w 2>/dev/null; exit $s"
        )
        try:
            done = self.conn.run(script, check=False, timeout=timeout + 30)
        except HostError:
            return None
        if done.returncode in (126, 127, 137):  # not runnable, not installed, timed out
            return None
        return Queried(done.returncode, done.stdout.decode("utf-8", errors="replace"))

    @staticmethod
    def base_env() -> dict[str, str]:
        """Commands keep the host's own login environment; only the spec's variables are added."""
        return {}

    def run(self, request: StepRequest) -> ProcessResult:
        """The step on the host (its ``cwd`` is a local path, not used: it starts in the
        host's workdir); its output fetched into the request's files."""
        if self.measurement is None:
            self.prepare()
        argv = spawn_argv(request.command, request.shell)
        if request.cpus:
            argv = ["taskset", "-c", ",".join(map(str, request.cpus)), *argv]
        step = RemoteStep(self.conn, _step_folder(), request.kill_grace, secrets.token_hex(8))
        if self._shim is not None:
            script, parse = self._shim_script(step, argv, request.env), shim_result
        else:
            script, parse = self._sh_script(step, argv, request.env), sh_result
            step.portable = True
        result: ProcessResult | None = None
        try:
            result = step.wait(script, request.timeout, request.stop, parse)
        finally:
            # A step that left processes keeps its scratch directory (their shim's pid)
            # until they are stopped.
            lingers = result is not None and result.lingering is not None
            step.fetch(request.stdout_path, request.stderr_path, remove=not lingers)
        return result

    def _cd(self) -> str:
        return f"cd {shlex.quote(self.workdir)} && " if self.workdir else ""

    def _shim_script(self, step: RemoteStep, argv: list[str], env: Mapping[str, str]) -> str:
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

    def _sh_script(self, step: RemoteStep, argv: list[str], env: Mapping[str, str]) -> str:
        grace_ds = max(1, round(step.grace * 10))
        return (
            f"{self._cd()}exec env {_assignments(env)} sh -c {shlex.quote(STEP_SCRIPT)} "
            f"perflab-step {step.scratch} {grace_ds} {step.token} "
            + " ".join(shlex.quote(a) for a in argv)
        )


def _assignments(env: Mapping[str, str]) -> str:
    return " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
