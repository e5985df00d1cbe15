"""A variant's kernel: before its run, its host is booted into the kernel (and command line)
the variant names, or rebooted before every run with ``reboot = "each-run"``."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from perflab.run.ssh import HostError

if TYPE_CHECKING:
    from perflab.run.hosts import Hosts
    from perflab.spec.schema import HostSpec, VariantSpec


def ensure_kernel(
    hosts: Hosts,
    host_specs: Mapping[str, HostSpec],
    variant: VariantSpec,
    message: Callable[[str], None],
) -> tuple[str | None, str | None]:
    """Boots the variant's host into its kernel when it runs another (or before every
    run with ``reboot = "each-run"``) and verifies it. Returns (why the run cannot go
    on, or None; ``host<TAB>kernel<TAB>boot id<TAB>cmdline`` for the run's record)."""
    from perflab.run.boot import DEFAULT_BOOT, boot, kernel_state, mismatch

    name = variant.on
    if name in (None, "local"):
        return None, None
    host = host_specs[name]
    if not (variant.kernel or variant.cmdline or host.reboot == "each-run"):
        return None, None
    conn = hosts.remote_executor(name).conn
    try:
        state = kernel_state(conn)
        why = mismatch(state, variant.kernel, variant.cmdline)
        if why or host.reboot == "each-run":
            template = variant.boot or host.boot or DEFAULT_BOOT
            command = template.replace("{kernel}", shlex.quote(variant.kernel or ""))
            state = boot(conn, command, host.boot_timeout)
            message(f"host '{name}' booted ({command}): {state.kernel}, for variant {variant.name}")
            why = mismatch(state, variant.kernel, variant.cmdline)
            if why:
                why = f"host '{name}' {why} after `{command}`"
    except HostError as e:
        return e.one_line(), None
    record = f"{name}\t{state.kernel}\t{state.boot_id}\t{state.cmdline}"
    return why, record
