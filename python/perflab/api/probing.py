"""Platform probes (`perflab probe`): a single-core microbenchmark run here — CPU score,
memmove bandwidth, memory latency — and, when asked, stored as an experiment (one run per
repeat) that the cross-platform model reads back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.workloads.probes import ProbeResult as ProbeResult


def run_probe(
    probe: str,
    *,
    core: int | None,
    repeat: int,
    store: str | None = None,
    name: str | None = None,
    **options: Any,
) -> tuple[ProbeResult, int | None]:
    """The probe's result, and the id of the experiment it was stored as (``store``)."""
    import perflab.workloads.probes as probes  # numpy/scipy: imported when a probe runs

    result: ProbeResult = probes.run_probe(probe, core=core, repeat=repeat, **options)
    if store is None:
        return result, None
    from perflab.platform.stored import record_probe
    from perflab.store import Database

    with Database(store) as db:
        return result, record_probe(db, result, name=name)


def memmove_cases() -> dict[str, tuple[int, int]]:
    """mmbm's memmove cases: name → (copy size in bytes, buffer count)."""
    import perflab.workloads.probes as probes

    return probes.memmove_cases()


def sweep_table(result: ProbeResult) -> tuple[list[int], list[int], dict[tuple[int, int], float]]:
    """A memmove sweep as (copy sizes, buffer counts, (size, buffers) → median MiB/s)."""
    import perflab.workloads.probes as probes

    return probes.sweep_table(result)


def latency_table(result: ProbeResult) -> list[tuple[int, dict[str, float]]]:
    """A latency probe as [(working-set bytes, {order: median ns/access})]."""
    import perflab.workloads.probes as probes

    return probes.latency_table(result)
