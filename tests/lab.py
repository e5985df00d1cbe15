"""The emulated device lab (docs/lab.md) for tests: real Debian kernels in QEMU.

    from lab import lab_fixture, start_vm  # lab_fixture: the session fixture `lab`

    def test_x(lab):                        # lab.cache, lab.kernels("router"), ...
        with start_vm("router", "6.1.0-47-4kc-malta", forwards=[11211]) as vm:
            vm.ssh                          # "root@127.0.0.1:PORT"
            vm.identity, vm.ssh_options     # the client key, ["HostKeyAlias=...", ...]
            vm.run("uname -r").stdout       # through the real ssh client
            vm.forwarded[11211]             # the 127.0.0.1 port forwarded to guest port 11211
            vm.console                      # the console so far (kernel log, perflab-lab: lines)
            vm.host_table()                 # the spec's [hosts.NAME] keys for it
        # left: QEMU stopped (vm.stop()), its process reaped

``lab_build()`` runs ``scripts/lab/build`` once per process (cached: a second build is
free); a lab that cannot be built fails the test with the build's own error, never a
skip (``scripts/setup`` installs QEMU and the rest). ``vm_argv(...)`` is the
``scripts/lab/vm`` command line, for a spec whose controller-side power-on command starts
the VM itself. One VM at a time per test: the machine has 2 cores.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import LOOPBACK, free_port

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "scripts" / "lab" / "build"
VM = ROOT / "scripts" / "lab" / "vm"
CACHE = Path(os.environ.get("PERFLAB_LAB_CACHE") or Path.home() / ".cache" / "perflab" / "lab")
MACHINES = ("router", "x86")
# Boot-to-SSH is ~5 s (router) and ~6 s (x86) under TCG on an idle machine; the bound
# leaves room for a loaded 2-core CI machine.
BOOT_TIMEOUT_S = 90.0
BUILD_TIMEOUT_S = 900.0


def host_key_alias(machine: str) -> str:
    return f"perflab-lab-{machine}"


@dataclass(frozen=True)
class Lab:
    """The built lab: where it is and what it has."""

    cache: Path

    @property
    def identity(self) -> Path:
        return self.cache / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.cache / "known_hosts"

    def kernels(self, machine: str) -> list[str]:
        """The kernel releases built for ``machine`` (router, x86), in build order."""
        return (self.cache / machine / "kernels.list").read_text().split()


_built: Lab | None = None


def lab_build() -> Lab:
    """``scripts/lab/build`` once per process; a failed build fails the calling test."""
    global _built
    if _built is None:
        try:
            proc = subprocess.run(
                [str(BUILD), "--quiet"],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                env={**os.environ, "PERFLAB_LAB_CACHE": str(CACHE)},
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"scripts/lab/build did not finish in {BUILD_TIMEOUT_S:.0f} s")
        if proc.returncode != 0:
            pytest.fail(
                f"the device lab could not be built (scripts/lab/build exited {proc.returncode}):\n"
                f"{(proc.stdout + proc.stderr).strip()[-2000:]}"
            )
        _built = Lab(CACHE)
    return _built


@pytest.fixture(scope="session", name="lab")
def lab_fixture() -> Lab:
    """The built lab (once per session); import ``lab_fixture`` into a test module to use it."""
    return lab_build()


def vm_argv(
    machine: str,
    kernel: str | None = None,
    *,
    cmdline: str = "",
    ssh_port: int | str | None = None,
    forwards: Iterable[tuple[int | str, int | str]] = (),
    console: str = "stdio",
    console_log: str | Path | None = None,
    mem: int | None = None,
    reboot: str = "exit",
    count: bool = False,
    perf: bool = False,
) -> list[str]:
    """The ``scripts/lab/vm`` command line. Values may be placeholders, e.g.
    ``vm_argv("router", "{kernel}", cmdline="{cmdline}", ssh_port=2222)`` for a spec's
    boot command; ``shlex.join`` makes it one shell string."""
    argv = [str(VM), "--machine", machine]
    if kernel:
        argv += ["--kernel", kernel]
    if cmdline:
        argv += ["--cmdline", cmdline]
    if ssh_port is not None:
        argv += ["--ssh-port", str(ssh_port)]
    for host, guest in forwards:
        argv += ["--forward", f"{host}:{guest}"]
    argv += ["--console", console]
    if console_log is not None:
        argv += ["--console-log", str(console_log)]
    if mem is not None:
        argv += ["--mem", str(mem)]
    argv += ["--reboot", reboot]
    if count:  # its instructions counted, for `vm --counters`
        argv += ["--count"]
    if perf:  # the router's perf disk attached: perf at /usr/bin/perf there
        argv += ["--perf"]
    return argv


def ssh_options(lab: Lab, machine: str) -> list[str]:
    """``Key=value`` options for ssh -o (a spec's ``[hosts.X] options``): the baked host key
    is checked under its alias, whatever port the VM is forwarded to."""
    return [
        f"HostKeyAlias={host_key_alias(machine)}",
        f"UserKnownHostsFile={lab.known_hosts}",
        "StrictHostKeyChecking=yes",
        "IdentitiesOnly=yes",
    ]


class Vm:
    """One running lab VM (QEMU in the foreground of ``scripts/lab/vm``, which execs it)."""

    def __init__(
        self,
        lab: Lab,
        machine: str,
        kernel: str,
        workdir: Path,
        cmdline: str,
        forwards: Iterable[int],
        mem: int | None,
        reboot: str,
    ) -> None:
        self.lab, self.machine, self.kernel, self.workdir = lab, machine, kernel, workdir
        self.ssh_port = free_port()
        self.forwarded = {guest: free_port() for guest in forwards}
        self.console_path = workdir / "console.log"
        self.argv = vm_argv(
            machine,
            kernel,
            cmdline=cmdline,
            ssh_port=self.ssh_port,
            forwards=[(h, g) for g, h in self.forwarded.items()],
            mem=mem,
            reboot=reboot,
        )
        self._out = open(self.console_path, "wb")  # closed in stop()
        self.started = time.monotonic()
        self.boot_seconds: float | None = None  # QEMU start to SSH login, once waited for
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PERFLAB_LAB_CACHE": str(lab.cache)},
        )

    # --- what a spec needs ---------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def ssh(self) -> str:
        return f"root@{LOOPBACK}:{self.ssh_port}"

    @property
    def identity(self) -> Path:
        return self.lab.identity

    @property
    def ssh_options(self) -> list[str]:
        return ssh_options(self.lab, self.machine)

    def host_table(self) -> str:
        """TOML keys of a spec's ``[hosts.NAME]`` table for this VM."""
        opts = ", ".join(f'"{o}"' for o in self.ssh_options)
        return f'ssh = "{self.ssh}"\nidentity = "{self.identity}"\noptions = [{opts}]\n'

    @property
    def command_line(self) -> str:
        """The shell command that started this VM."""
        return shlex.join(self.argv)

    # --- watching it -----------------------------------------------------------------
    @property
    def console(self) -> str:
        return self.console_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ssh_argv(self, command: str, timeout_s: float = 10.0) -> list[str]:
        opts = [
            *self.ssh_options,
            "BatchMode=yes",
            "LogLevel=ERROR",
            f"ConnectTimeout={max(1, int(timeout_s))}",
        ]
        return [
            "ssh",
            "-p",
            str(self.ssh_port),
            "-i",
            str(self.identity),
            *(a for o in opts for a in ("-o", o)),
            f"root@{LOOPBACK}",
            command,
        ]

    def run(
        self, command: str, timeout_s: float = 30.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``command`` on the VM through the real ssh client."""
        proc = subprocess.run(
            self.ssh_argv(command, timeout_s),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{command!r} on the {self.machine} VM exited {proc.returncode}: {proc.stderr.strip()}"
            )
        return proc

    def ssh_banner(self) -> bool:
        """Whether the guest's SSH server answers on the forwarded port now (QEMU accepts
        the connection itself and closes it while nothing listens in the guest)."""
        try:
            with socket.create_connection((LOOPBACK, self.ssh_port), timeout=1.0) as s:
                s.settimeout(1.0)
                return s.recv(64).startswith(b"SSH-2.0")
        except OSError:
            return False

    def wait_ssh(self, timeout_s: float = BOOT_TIMEOUT_S) -> float:
        """Until a login works (the real ssh client); the seconds since QEMU started.
        Raises with the console's last lines if QEMU exits or time runs out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(
                    f"the {self.machine} VM ({self.kernel}) exited with {self.proc.returncode} "
                    f"before SSH answered; console:\n{self.console_tail()}"
                )
            if self.ssh_banner() and self.run("true", timeout_s=15.0, check=False).returncode == 0:
                return time.monotonic() - self.started
            time.sleep(0.1)
        raise RuntimeError(
            f"the {self.machine} VM ({self.kernel}) did not answer SSH within {timeout_s:.0f} s; "
            f"console:\n{self.console_tail()}"
        )

    def wait_console(self, text: str, timeout_s: float = BOOT_TIMEOUT_S) -> None:
        """Until ``text`` is on the console (raises with its last lines after timeout_s)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in self.console:
                return
            if not self.alive() and text not in self.console:
                break
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not on the console; it ends:\n{self.console_tail()}")

    def wait_exit(self, timeout_s: float) -> int | None:
        """QEMU's exit status, or None if it still runs after timeout_s."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def console_tail(self, lines: int = 20) -> str:
        return "\n".join(self.console.splitlines()[-lines:])

    # --- stopping it -------------------------------------------------------------------
    def stop(self) -> None:
        """SIGTERM to QEMU (SIGKILL after 10 s), reaped: nothing of the VM is left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._out.closed:
            self._out.close()

    def __enter__(self) -> Vm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_vm(
    machine: str,
    kernel: str | None = None,
    *,
    cmdline: str = "",
    forwards: Iterable[int] = (),
    mem: int | None = None,
    reboot: str = "exit",
    wait_ssh: bool = True,
    timeout_s: float = BOOT_TIMEOUT_S,
) -> Vm:
    """Boots ``machine`` (router, x86) into ``kernel`` (default: its first) on free ports,
    and, with ``wait_ssh``, returns once a login works (else stops it and raises with the
    console's last lines). Forwards guest TCP ports ``forwards`` to free ports on
    127.0.0.1 (``vm.forwarded[GUEST]``). The console is kept in ``vm.console``."""
    built = lab_build()
    if machine not in MACHINES:
        raise ValueError(f"unknown lab machine {machine!r} (router, x86)")
    kernel = kernel or built.kernels(machine)[0]
    forwards = list(forwards)
    for _attempt in range(3):  # a free port taken meanwhile: QEMU exits at once, try others
        vm = Vm(
            built,
            machine,
            kernel,
            Path(tempfile.mkdtemp(prefix=f"perflab-lab-{machine}-")),
            cmdline,
            forwards,
            mem,
            reboot,
        )
        if vm.wait_exit(0.3) is not None and "host forwarding" in vm.console:
            vm.__exit__()
            continue
        break
    if wait_ssh:
        try:
            vm.boot_seconds = vm.wait_ssh(timeout_s)
        except BaseException:
            vm.__exit__()
            raise
    return vm


def pid_gone(pid: int) -> bool:
    """No process ``pid`` exists (any more); a zombie counts as existing."""
    return not Path(f"/proc/{pid}").exists()


def stop_perflab(proc: subprocess.Popen[bytes], sig: int, *, timeout: float = 120) -> None:
    """Sends ``sig`` to a ``perflab run`` started with stderr piped, and checks how it
    ended: SIGINT — exit 130, saying how to resume experiment 1; SIGKILL — killed. Kills it
    whatever happened (a test that failed leaves nothing)."""
    try:
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=timeout)
        if sig == signal.SIGINT:
            assert proc.returncode == 130, err
            assert b"resume with: perflab run --resume 1" in err
        else:
            assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
