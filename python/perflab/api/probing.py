"""Platform probes (`perflab probe`): a single-core microbenchmark run here — CPU score,
memmove bandwidth, memory latency — and, when asked, stored as an experiment (one run per
repeat) that the cross-platform model reads back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from perflab.workloads.probes import ProbeResult


class ProbeRun(NamedTuple):
    """A probe's result, and the experiment it was stored as (None: not stored)."""

    result: ProbeResult
    experiment_id: int | None


def run_probe(
    probe: str,
    *,
    core: int | None,
    repeat: int,
    store: str | None = None,
    name: str | None = None,
    **options: Any,
) -> ProbeRun:
    """The probe's result, and the id of the experiment it was stored as (``store``)."""
    import perflab.workloads.probes as probes  # numpy/scipy: imported when a probe runs

    result: ProbeResult = probes.run_probe(probe, core=core, repeat=repeat, **options)
    if store is None:
        return ProbeRun(result, None)
    from perflab.platform.stored import record_probe
    from perflab.store import Database

    with Database(store) as db:
        return ProbeRun(result, record_probe(db, result, name=name))
