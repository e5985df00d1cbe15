"""Kernel variants: a host booted into the kernel a run needs, and verified after booting
(a boot command run on the host itself; a device booted from here is `device.py`'s).

A host is identified across a boot by its boot id (``/proc/sys/kernel/random/boot_id``,
new at every boot, kexec included): after the boot command, perflab waits — bounded by
the host's ``boot_timeout`` — until the host answers again with a new boot id, then reads
``uname -r`` and ``/proc/cmdline``. A host that comes back with another kernel, or never
comes back, fails the run with a one-line reason; no run is ever recorded on a kernel
other than its variant's.
"""

from __future__ import annotations

import contextlib
import fnmatch
import shlex
import threading
import time
from dataclasses import dataclass

from perflab.hosts.ssh import HostError, SshConnection

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


@dataclass(frozen=True)
class Booted:
    """A boot that came up: what the host runs now, and how it was booted (the boot
    command as run, or ``boot N from here`` for a device)."""

    state: KernelState
    how: str


def kernel_state(conn: SshConnection, timeout: float = 30.0) -> KernelState:
    out = conn.run(
        "uname -r; cat /proc/sys/kernel/random/boot_id; cat /proc/cmdline", timeout=timeout
    ).stdout.decode("utf-8", "replace")
    lines = out.splitlines() + ["", "", ""]
    return KernelState(lines[0].strip(), lines[1].strip(), lines[2].strip())


def kernel_matches(release: str, kernel: str) -> bool:
    """Whether ``release`` (``uname -r``) is the ``kernel`` a variant names: the same text,
    or, when it holds ``*`` or ``?``, a release it matches as a shell pattern
    (``"6.1.*-g{commit}"``: a kernel built from a commit whose version is not spelled)."""
    if "*" in kernel or "?" in kernel:
        return fnmatch.fnmatchcase(release, kernel)
    return release == kernel


def mismatch(state: KernelState, kernel: str | None, cmdline: str | None) -> str | None:
    """Why ``state`` is not what a variant needs (None: it is)."""
    if kernel and not kernel_matches(state.kernel, kernel):
        if "*" in kernel or "?" in kernel:
            return f"runs kernel {state.kernel}, not one matching {kernel}"
        return f"runs kernel {state.kernel}, not {kernel}"
    if cmdline and cmdline not in state.cmdline:
        return f"its /proc/cmdline lacks {cmdline!r}"
    return None


#: Where a boot command run on the host keeps its output and exit status (until it boots).
BOOT_LOG = "/tmp/perflab-boot"
#: Seconds a boot command that fails at once has to say so before perflab waits for the boot.
EARLY_FAILURE_S = 5.0


def boot(
    conn: SshConnection, command: str, timeout: float, stop: threading.Event | None = None
) -> KernelState:
    """Runs the boot ``command`` on the host, detached from the session (no ``nohup``:
    busybox may lack it), and waits until the host answers with a new boot id (HostError
    after ``timeout`` seconds, or once ``stop`` is set). A command that fails before the
    host goes down fails the boot at once, with its output. Returns what the host runs
    then."""
    before = kernel_state(conn)
    out, status = f"{BOOT_LOG}.out", f"{BOOT_LOG}.status"
    launch = (
        f"rm -f {out} {status}; ( trap '' HUP; sh -c {shlex.quote(command)} >{out} 2>&1 "
        f"</dev/null; echo $? >{status} ) >/dev/null 2>&1 </dev/null &"
    )
    # The command may never answer: the connection goes down with the host.
    with contextlib.suppress(HostError):
        conn.run(launch, check=False, retry=False, timeout=30)
    deadline = time.monotonic() + timeout
    said = _early_failure(conn, command, min(deadline, time.monotonic() + EARLY_FAILURE_S))
    conn.close()
    last = "no answer"
    while time.monotonic() < deadline:
        if stop is not None and stop.is_set():
            raise HostError(f"host {conn.host.describe()}: stopped while booting")
        try:
            conn.connect_once(min(30.0, max(0.5, deadline - time.monotonic())))
            state = kernel_state(conn, timeout=max(1.0, min(30.0, deadline - time.monotonic())))
        except HostError as e:
            last = e.message.split(": ", 2)[-1]
        else:
            if state.boot_id and state.boot_id != before.boot_id:
                return state
            last = "still up on the same boot" + (f"; `{command}` printed: {said}" if said else "")
        conn.close()
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    raise HostError(
        f"host {conn.host.describe()} did not come back from `{command}` within "
        f"{timeout:g} s ({last})"
    )


def _early_failure(conn: SshConnection, command: str, until: float) -> str:
    """Watches the boot command until the host goes down or ``until``: HostError when it
    exited with a failure; else the last line it printed ("" for none)."""
    said = ""
    while time.monotonic() < until:
        try:
            done = conn.run(
                f"cat {BOOT_LOG}.status 2>/dev/null; echo; tail -n 3 {BOOT_LOG}.out 2>/dev/null",
                check=False,
                retry=False,
                timeout=max(1.0, until - time.monotonic()),
            )
        except HostError:
            return said  # the host is going down
        text = done.stdout.decode("utf-8", "replace")
        code, _, printed = text.partition("\n")
        lines = [x.strip() for x in printed.splitlines() if x.strip()]
        said = lines[-1][:200] if lines else ""
        if code.strip() not in ("", "0"):
            raise HostError(
                f"host {conn.host.describe()}: `{command}` failed there (exit status "
                f"{code.strip()})" + (f": {said}" if said else "")
            )
        time.sleep(POLL_S / 4)
    return said
