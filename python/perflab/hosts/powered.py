"""A device booted from this machine (``[hosts.NAME.control]``): a VM started with the
kernel a run needs, a board behind a power switch. Its control commands run here, the
controller; the device itself is a `RemoteHost`, reached over SSH as any host is.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from perflab.hosts.base import Host, output_tail
from perflab.hosts.boot import KernelState, kernel_state
from perflab.hosts.console import Console
from perflab.hosts.process import ProcessResult
from perflab.hosts.remote import RemoteHost
from perflab.hosts.ssh import HostError, SshConnection
from perflab.hosts.step import TERM_GRACE_S, StepRequest, output_files

#: Seconds between attempts to reach a booting device, and the longest one attempt takes.
POLL_S = 0.5
ATTEMPT_S = 15.0
#: Seconds a power_off command may take; a counters command.
POWER_OFF_TIMEOUT_S = 120.0
COUNTERS_TIMEOUT_S = 30.0

#: A control command's template and the values for it → the shell command (values quoted).
Render = Callable[[str, Mapping[str, object]], str]


@dataclass(frozen=True)
class CounterReading:
    """A device's counts at one moment (event → count) and the text its control printed."""

    counts: dict[str, float]
    text: bytes


@dataclass(frozen=True)
class Control:
    """How a device is driven from here (the spec's ``[hosts.NAME.control]`` and the host's
    ``boot_timeout`` and default ``kernel``)."""

    boot: str
    power_off: str | None = None
    console: str | None = None
    boot_timeout: float = 600.0
    kernel: str | None = None
    counters: str | None = None


class _Held:
    """A command of this machine run on a thread of its own until it exits or is stopped
    (a VM in the foreground, a console reader); what it printed goes to ``run_dir``."""

    def __init__(
        self, name: str, command: str, local: Host, cwd: Path, run_dir: Path, grace: float
    ) -> None:
        self.name = name
        self.stop_event = threading.Event()
        self.result: ProcessResult | None = None
        self.error: str | None = None  # why it could not start
        self.stdout, self.stderr = output_files(run_dir, name)
        env = dict(os.environ)
        request = StepRequest(
            command, cwd, self.stdout, self.stderr, env, stop=self.stop_event, kill_grace=grace
        )

        def run() -> None:
            try:
                self.result = local.run(request)
            except (OSError, ValueError, HostError) as e:
                self.error = str(e) or type(e).__name__
                return
            if self.result.lingering is not None:  # it daemonized: held until the stop
                self.stop_event.wait()
                self.result.lingering.stop()

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def failure(self) -> str | None:
        """Why it ended with a failure, once it has; else None."""
        if self.alive():
            return None
        if self.error is not None:
            return f"{self.name}: {self.error}"
        r = self.result
        if r is None or r.ok:
            return None
        tail = _last_line(self.stderr) or _last_line(self.stdout)
        return f"{self.name}: {r.describe_failure()}" + (f": {tail}" if tail else "")

    def stop(self) -> None:
        self.stop_event.set()
        self._thread.join()


class PoweredHost(RemoteHost):
    """A `RemoteHost` that this machine powers, boots into a kernel and watches."""

    def __init__(
        self,
        conn: SshConnection,
        control: Control,
        *,
        local: Host,
        workdir: Path,
        render: Render,
        values: Mapping[str, object] | None = None,
        remote_workdir: str | None = None,
        stage: bool = True,
        kill_grace: float = TERM_GRACE_S,
    ) -> None:
        super().__init__(conn, remote_workdir, stage=stage)
        self.control, self.local, self.here = control, local, workdir
        self.render, self.values, self.grace = render, dict(values or {}), kill_grace
        self.console = Console()
        self.up = False
        self.boots = 0
        self._dir: Path | None = None
        self._power: _Held | None = None
        self._held_up = False  # its boot command still ran when it answered (a VM)
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
            command = self.render(source[4:], self._values(None, None))
            self._console_command = _Held(
                f"console-{self.name}", command, self.local, self.here, self._dir, self.grace
            )
            self.console.follow_file(self._console_command.stdout, from_start=True)
        else:
            self.console.follow_file(Path(source))

    def _values(self, kernel: str | None, cmdline: str | None) -> dict[str, object]:
        return {
            **self.values,
            "kernel": kernel or self.control.kernel or "",
            "cmdline": cmdline or "",
            "host": self.name,
        }

    def boot(
        self, kernel: str | None, cmdline: str | None, stop: threading.Event | None = None
    ) -> KernelState:
        """Powers the device off, boots it into ``kernel`` with ``cmdline`` and waits until
        it answers over SSH (HostError with the console's last lines when it does not, or
        at once when ``stop`` is set: the experiment's stop request)."""
        assert self._dir is not None, "start() first"
        self.power_off()
        self.boots += 1
        command = self.render(self.control.boot, self._values(kernel, cmdline))
        where = self._dir / f"boot-{self.boots}"
        where.mkdir()
        power = _Held(f"boot-{self.name}", command, self.local, self.here, where, self.grace)
        self._power = power
        if self.control.console is None:
            self._follow = self.console.follow_file(power.stdout, from_start=True)
        timeout = self.control.boot_timeout
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            if stop is not None and stop.is_set():
                self.conn.down = "its boot was stopped"
                raise HostError(f"host '{self.name}': stopped while booting")
            failed = power.failure()
            if failed is not None:
                self.conn.down = "its boot command failed"
                raise HostError(f"host '{self.name}': boot failed: {failed}" + self._note())
            panic = self.console.panic()
            if panic is not None:  # it will not answer on this boot: no need to wait it out
                self.conn.down = f"its kernel panicked booting {kernel or 'its kernel'}"
                raise HostError(f"host '{self.name}': the kernel panicked: {panic}")
            left = deadline - time.monotonic()
            if left <= 0:
                self.conn.down = f"it did not answer after booting {kernel or 'its kernel'}"
                ended = "; the boot command has exited" if not power.alive() else ""
                raise HostError(
                    f"host '{self.name}' did not answer within {timeout:g} s of `{command}` "
                    f"({last}{ended})" + self._note()
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
                self._held_up = power.alive()  # a VM in the foreground, not a power switch
                return state
            time.sleep(max(0.0, min(POLL_S, deadline - time.monotonic())))

    def gone(self) -> bool:
        """The boot command that was still running when the device answered (a VM in the
        foreground) has exited since: the device went away, whatever the connection says."""
        power = self._power
        return self.up and self._held_up and power is not None and not power.alive()

    def _note(self) -> str:
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
                self._power_off(self._dir)
        finally:
            if self._power is not None:
                self._power.stop()
                self._power = None
            if self._follow is not None:
                self._follow.set()
                self._follow = None

    def _power_off(self, folder: Path) -> None:
        assert self.control.power_off is not None
        self._control_step("power_off", self.control.power_off, folder, POWER_OFF_TIMEOUT_S)

    def read_counters(self, folder: Path) -> CounterReading:
        """The device's counts now, from its control's ``counters`` command (``EVENT COUNT``
        lines), and what the command printed; HostError when it fails or prints another
        line."""
        assert self.control.counters is not None
        out = self._control_step("counters", self.control.counters, folder, COUNTERS_TIMEOUT_S)
        text = out.read_bytes()
        counts: dict[str, float] = {}
        for n, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            try:
                if len(parts) != 2:
                    raise ValueError
                counts[parts[0]] = float(parts[1])
            except ValueError:
                raise HostError(
                    f"host '{self.name}': counters printed '{line.strip()[:80]}' on its line "
                    f"{n}, not 'EVENT COUNT'"
                ) from None
        return CounterReading(counts, text)

    def _control_step(self, what: str, template: str, folder: Path, timeout: float) -> Path:
        """One of the control's commands run here to its end (HostError when it fails,
        with its last line); the file of what it printed."""
        out, err = output_files(folder, f"{what}-{self.name}")
        command = self.render(template, self._values(None, None))
        env = dict(os.environ)
        request = StepRequest(
            command, self.here, out, err, env, timeout=timeout, kill_grace=self.grace
        )
        try:
            result = self.local.run(request)
        except (OSError, ValueError) as e:
            raise HostError(f"host '{self.name}': {what} could not start: {e}") from None
        if result.lingering is not None:
            result.lingering.stop()
        if not result.ok:
            tail = _last_line(err) or _last_line(out)
            raise HostError(
                f"host '{self.name}': {what} {result.describe_failure()}"
                + (f": {tail}" if tail else "")
            )
        return out

    def close(self) -> None:
        """Powers it off for good and ends the console's capture."""
        try:
            self.power_off()
        finally:
            if self._console_command is not None:
                self._console_command.stop()
            self.console.close()


def _last_line(path: Path) -> str:
    try:
        return output_tail(path.read_bytes())
    except OSError:
        return ""
