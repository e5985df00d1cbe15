"""A run's hosts booted as it needs them, before its first step: its variant's host into
the kernel (and command line) the variant names, a device booted from here
(``[hosts.NAME.control]``) whenever it is down, and every host with
``reset = "each-run"`` afresh. Each boot is verified (``uname -r``, the boot id,
``/proc/cmdline``); a run is never recorded on another kernel than its variant's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from perflab.hosts.ssh import HostError

if TYPE_CHECKING:
    from perflab.execution.experiment_hosts import Hosts
    from perflab.spec.schema import HostSpec, VariantSpec


@dataclass(frozen=True)
class Readiness:
    """A run's hosts as it starts: why it cannot go on (None: it can) and in which step
    (``boot``, or ``build``: its variant's kernel was not built), the kernels it runs on
    (``host<TAB>kernel<TAB>boot id<TAB>cmdline`` lines, None when nothing was checked),
    and what to keep with the run besides (a build's output)."""

    why: str | None = None
    kernels: str | None = None
    step: str = "boot"
    artifacts: dict[str, bytes] = field(default_factory=dict)


def ensure_kernel(
    hosts: Hosts,
    host_specs: Mapping[str, HostSpec],
    variant: VariantSpec,
    message: Callable[[str], None],
) -> Readiness:
    """Boots what the run needs booted, and says whether it can go on."""
    from perflab.hosts.boot import kernel_state, mismatch

    records: list[str] = []
    hosts.revive()
    for name in _hosts_to_check(hosts, host_specs, variant):
        host = host_specs[name]
        mine = name == variant.on
        kernel, cmdline = (variant.kernel, variant.cmdline) if mine else (None, None)
        try:
            state = None if hosts.is_down(name) else kernel_state(hosts.connection(name))
            why = "it is down" if state is None else mismatch(state, kernel, cmdline)
            if why or host.reset == "each-run":
                state, how = hosts.boot(name, kernel, cmdline, variant.boot if mine else None)
                message(f"host '{name}' booted ({how}): {state.kernel}, for variant {variant.name}")
                why = mismatch(state, kernel, cmdline)
                if why:
                    return Readiness(f"host '{name}' {why} after booting ({how})", _joined(records))
        except HostError as e:
            return Readiness(e.one_line(), _joined(records))
        assert state is not None  # read, or booted into
        records.append(f"{name}\t{state.kernel}\t{state.boot_id}\t{state.cmdline}")
    return Readiness(None, _joined(records))


def _hosts_to_check(
    hosts: Hosts, host_specs: Mapping[str, HostSpec], variant: VariantSpec
) -> list[str]:
    """The variant's host when it names a kernel, then every device booted from here
    (``[hosts.NAME.control]``, or a labgrid place with a power port) and every reset host."""
    names = []
    if variant.on not in (None, "local") and (variant.kernel or variant.cmdline):
        names.append(variant.on)
    for name, h in host_specs.items():
        if hosts.booted_from_here(name) or h.reset == "each-run":
            names.append(name)
    return list(dict.fromkeys(n for n in names if n is not None))


def _joined(records: list[str]) -> str | None:
    return "\n".join(records) if records else None
