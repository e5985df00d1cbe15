"""A device booted from this machine (``[hosts.NAME.control]``): a VM started with the
kernel a run needs, a board behind a power switch. Its commands run here, the
controller; the device itself is reached over SSH as any host is.

A boot: the SSH connection is closed and marked down (no read waits on a device that
is not there), the device is powered off (``power_off``, then the previous boot
command's processes stopped), ``boot`` is started with ``{kernel}`` and ``{cmdline}``
and held — a VM in the foreground lives as long as that boot, and perflab's end,
however it comes, ends it (the measurement shim's parent-death signal) — and the
device is polled until it answers over SSH, bounded by ``boot_timeout``. A boot command
that fails, or a device that never answers (a panic, a hang), fails with the
console's last lines as the reason; the device is then down until the next boot.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.run.boot import KernelState, kernel_state
from perflab.run.command import StepOutput, run_command
from perflab.run.console import Console
from perflab.run.ssh import HostError, SshConnection
from perflab.spec.template import render_shell

if TYPE_CHECKING:
    from perflab.run.executor import Executor
    from perflab.spec.schema import HostSpec

#: Seconds between attempts to reach a booting device, and the longest one attempt takes.
POLL_S = 0.5
ATTEMPT_S = 15.0
#: Seconds a power_off command may take.
POWER_OFF_TIMEOUT_S = 120.0


class _Held:
    """A command of this machine run on a thread of its own until it exits or is stopped
    (a VM in the foreground, a console reader); what it printed goes to ``run_dir``."""

    def __init__(
        self, name: str, command: str, local: Executor, cwd: Path, run_dir: Path, grace: float
    ) -> None:
        self.name = name
        self.stop_event = threading.Event()
        self.result: StepOutput | None = None
        self.stdout = run_dir / f"{name}.stdout"

        def run() -> None:
            self.result = run_command(
                local,
                name,
                command,
                shell=True,
                env=dict(os.environ),
                cwd=cwd,
                run_dir=run_dir,
                timeout=None,
                stop=self.stop_event,
                kill_grace=grace,
            )
            held = self.result.process.lingering if self.result.process else None
            if held is not None:  # it daemonized: what it left lives until the stop
                self.stop_event.wait()
                held.stop()

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def failed(self) -> StepOutput | None:
        """Its outcome when it has exited with a failure, else None."""
        r = self.result
        return r if r is not None and not self._thread.is_alive() and not r.ok else None

    def stop(self) -> None:
        self.stop_event.set()
        self._thread.join()


class Device:
    """One controlled host: its boots, its console, its power."""

    def __init__(
        self,
        name: str,
        spec: HostSpec,
        conn: SshConnection,
        local: Executor,
        workdir: Path,
        values: dict[str, Any],
        kill_grace: float,
    ) -> None:
        assert spec.control is not None
        self.name, self.spec, self.control = name, spec, spec.control
        self.conn, self.local, self.workdir = conn, local, workdir
        self.values, self.grace = values, kill_grace
        self.console = Console()
        self.up = False
        self.boots = 0
        self._dir: Path | None = None
        self._power: _Held | None = None
        self._console_command: _Held | None = None
        self._follow: threading.Event | None = None
        self.conn.down = "not booted yet"

    def start(self, scratch: Path) -> None:
        """Starts capturing the console (a command's output, a port, a file)."""
        self._dir = scratch / f"device-{self.name}"
        self._dir.mkdir(parents=True, exist_ok=True)
        source = self.control.console
        if source is None:
            return  # the boot command's own output, followed at each boot
        if source.startswith("tcp://"):
            self.console.follow_tcp(source)
        elif source.startswith("cmd:"):
            command = render_shell(source[4:], self._values(None, None))
            self._console_command = _Held(
                f"console-{self.name}", command, self.local, self.workdir, self._dir, self.grace
            )
            self.console.follow_file(self._console_command.stdout, from_start=True)
        else:
            self.console.follow_file(Path(source))

    def _values(self, kernel: str | None, cmdline: str | None) -> dict[str, Any]:
        return {
            **self.values,
            "kernel": kernel or self.spec.kernel or "",
            "cmdline": cmdline or "",
            "host": self.name,
        }

    def boot(self, kernel: str | None, cmdline: str | None) -> KernelState:
        """Powers the device off, boots it into ``kernel`` with ``cmdline`` and waits until
        it answers over SSH (HostError with the console's last lines when it does not)."""
        assert self._dir is not None, "start() first"
        self.power_off()
        self.boots += 1
        command = render_shell(self.control.boot, self._values(kernel, cmdline))
        where = self._dir / f"boot-{self.boots}"
        where.mkdir()
        self._power = _Held(
            f"boot-{self.name}", command, self.local, self.workdir, where, self.grace
        )
        if self.control.console is None:
            self._follow = self.console.follow_file(self._power.stdout, from_start=True)
        deadline = time.monotonic() + self.spec.boot_timeout
        last = "no answer"
        while True:
            failed = self._power.failed()
            if failed is not None:
                self.conn.down = "its boot command failed"
                raise HostError(
                    f"host '{self.name}': boot failed: {failed.failure()}" + self._console_note()
                )
            panic = self.console.panic()
            if panic is not None:  # it will not answer on this boot: no need to wait it out
                self.conn.down = f"its kernel panicked booting {kernel or 'its kernel'}"
                raise HostError(f"host '{self.name}': the kernel panicked: {panic}")
            left = deadline - time.monotonic()
            if left <= 0:
                self.conn.down = f"it did not answer after booting {kernel or 'its kernel'}"
                ended = self._power.result is not None and not self._power.alive()
                raise HostError(
                    f"host '{self.name}' did not answer within {self.spec.boot_timeout:g} s "
                    f"of `{command}` ({last}"
                    + ("; the boot command has exited" if ended else "")
                    + ")"
                    + self._console_note()
                )
            self.conn.down = None
            try:
                self.conn.connect_once(min(ATTEMPT_S, left))
                state = kernel_state(self.conn, timeout=max(1.0, min(ATTEMPT_S, left)))
            except HostError as e:
                last = e.message.split(": ", 2)[-1]
                self.conn.close()
                self.conn.down = "booting"
            else:
                self.up = True
                return state
            time.sleep(max(0.0, min(POLL_S, deadline - time.monotonic())))

    def _console_note(self) -> str:
        tail = self.console.tail()
        return f"; console: {tail}" if tail else "; the console printed nothing"

    def power_off(self) -> None:
        """``power_off`` (HostError when it fails), then the boot command's processes
        stopped; the device is down after it."""
        self.conn.close()
        self.conn.down = "powered off"
        self.up = False
        try:
            if self.control.power_off and self._dir is not None:
                step = run_command(
                    self.local,
                    f"power_off-{self.name}",
                    render_shell(self.control.power_off, self._values(None, None)),
                    shell=True,
                    env=dict(os.environ),
                    cwd=self.workdir,
                    run_dir=self._dir,
                    timeout=POWER_OFF_TIMEOUT_S,
                    stop=None,
                    kill_grace=self.grace,
                )
                if not step.ok:
                    raise HostError(f"host '{self.name}': power_off failed: {step.failure()}")
        finally:
            if self._power is not None:
                self._power.stop()
                self._power = None
            if self._follow is not None:
                self._follow.set()
                self._follow = None

    def close(self) -> None:
        """Powers it off for good and ends the console's capture."""
        try:
            self.power_off()
        finally:
            if self._console_command is not None:
                self._console_command.stop()
            self.console.close()
