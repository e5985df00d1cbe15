"""Kernel variants: a host booted into the kernel a run needs, and verified after booting.

A host is identified across a boot by its boot id (``/proc/sys/kernel/random/boot_id``,
new at every boot, kexec included): after the boot command, perflab waits — bounded by
the host's ``boot_timeout`` — until the host answers again with a new boot id, then reads
``uname -r`` and ``/proc/cmdline``. A host that comes back with another kernel, or never
comes back, fails the run with a one-line reason; no run is ever recorded on a kernel
other than its variant's.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from dataclasses import dataclass

from perflab.run.ssh import HostError, SshConnection

#: Seconds between attempts to reach a booting host.
POLL_S = 2.0
DEFAULT_BOOT = "reboot"


@dataclass(frozen=True)
class KernelState:
    """What a host runs: ``uname -r``, its boot id and ``/proc/cmdline``."""

    kernel: str
    boot_id: str
    cmdline: str

    def describe(self) -> str:
        return f"{self.kernel} (boot {self.boot_id[:8]})"


def kernel_state(conn: SshConnection) -> KernelState:
    out = conn.run(
        "uname -r; cat /proc/sys/kernel/random/boot_id; cat /proc/cmdline", timeout=30
    ).stdout.decode("utf-8", "replace")
    lines = out.splitlines() + ["", "", ""]
    return KernelState(lines[0].strip(), lines[1].strip(), lines[2].strip())


def mismatch(state: KernelState, kernel: str | None, cmdline: str | None) -> str | None:
    """Why ``state`` is not what a variant needs (None: it is)."""
    if kernel and state.kernel != kernel:
        return f"runs kernel {state.kernel}, not {kernel}"
    if cmdline and cmdline not in state.cmdline:
        return f"its /proc/cmdline lacks {cmdline!r}"
    return None


def boot(conn: SshConnection, command: str, timeout: float) -> KernelState:
    """Runs the boot ``command`` on the host and waits until it answers with a new boot id
    (HostError after ``timeout`` seconds). Returns what it runs then."""
    before = kernel_state(conn)
    # The command may never answer: the connection goes down with the host.
    with contextlib.suppress(HostError):
        conn.run(f"nohup sh -c {shlex.quote(command)} >/dev/null 2>&1 &", check=False, retry=False)
    conn.close()
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            conn.connect_once()
            state = kernel_state(conn)
        except HostError as e:
            last = e.message.split(": ", 2)[-1]
        else:
            if state.boot_id and state.boot_id != before.boot_id:
                return state
            last = "still up on the same boot"
        conn.close()
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    raise HostError(
        f"host {conn.host.describe()} did not come back from `{command}` within "
        f"{timeout:g} s ({last})"
    )
