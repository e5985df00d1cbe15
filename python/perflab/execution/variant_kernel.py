"""A run's hosts booted as it needs them, before its first step: its variant's host into
the kernel (and command line) the variant names, a device booted from here
(``[hosts.NAME.control]``) whenever it is down, and every host with
``reset = "each-run"`` afresh. Each boot is verified (``uname -r``, the boot id,
``/proc/cmdline``); a run is never recorded on another kernel than its variant's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from perflab.hosts.ssh import HostError

if TYPE_CHECKING:
    from perflab.execution.experiment_hosts import Hosts
    from perflab.spec.schema import ExperimentSpec, VariantSpec


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
    spec: ExperimentSpec,
    variant: VariantSpec,
    message: Callable[[str], None],
) -> Readiness:
    """Boots what the run needs booted (`perflab.plan.hosts_needed`, the rule the dry run
    counts boots by), and says whether it can go on."""
    from perflab.hosts.boot import kernel_state, mismatch
    from perflab.plan import hosts_needed

    records: list[str] = []
    hosts.revive()
    for need in hosts_needed(spec, variant, hosts.booted_from_here):
        name, kernel, cmdline = need.host, need.kernel, need.cmdline
        mine = name == variant.on
        try:
            state = None if hosts.is_down(name) else kernel_state(hosts.connection(name))
            why = "it is down" if state is None else mismatch(state, kernel, cmdline)
            if why or need.each_run:
                booted = hosts.boot(name, kernel, cmdline, variant.boot if mine else None)
                state, how = booted.state, booted.how
                message(
                    f"host '{hosts.label(name)}' booted ({how}): {state.kernel}, "
                    f"for variant {variant.name}"
                )
                why = mismatch(state, kernel, cmdline)
                if why:
                    return Readiness(
                        f"host '{hosts.label(name)}' {why} after booting ({how})", _joined(records)
                    )
        except HostError as e:
            return Readiness(e.one_line(), _joined(records))
        assert state is not None  # read, or booted into
        records.append(f"{name}\t{state.kernel}\t{state.boot_id}\t{state.cmdline}")
    return Readiness(None, _joined(records))


def _joined(records: list[str]) -> str | None:
    return "\n".join(records) if records else None
