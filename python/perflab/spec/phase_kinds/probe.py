"""A probe phase: ``[phase.probe]``, a platform microbenchmark (``name = "cpu"``,
``"memmove"`` or ``"latency"`` and its options, `perflab.workloads.probes`) run inside
perflab on this machine, pinned to the phase's first picked core. Its execution:
`perflab.execution.phase_kinds.probe`."""

from __future__ import annotations

from collections.abc import Hashable, Set
from typing import TYPE_CHECKING, Any, cast

from perflab.spec.metric_names import NameSet, probe_names
from perflab.spec.phase_kinds.base import PhaseKind

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.schema import PhaseSpec


class ProbeKind(PhaseKind):
    key = "probe"
    schema = dict[str, Any]  # { name = "cpu"|"memmove"|"latency", ... }
    runner = "perflab.execution.phase_kinds.probe"
    here_only = True

    def check(self, spec: Spec, i: int, phase: PhaseSpec) -> None:
        from perflab.workloads.probes import PROBES

        probe_name = table(phase).get("name")
        if probe_name not in PROBES:
            raise spec.error(
                ("phase", i, "probe"),
                f"probe phase '{phase.name}': name = {probe_name!r} is not a probe",
                hint="use " + " | ".join(f'"{x}"' for x in PROBES),
            )
        super().check(spec, i, phase)  # no parser: its metrics are its own

    def metric_names(self, phase: PhaseSpec, modes: Set[Hashable]) -> NameSet | None:
        return probe_names(table(phase))


def table(phase: PhaseSpec) -> dict[str, Any]:
    """A probe phase's table (its templates not yet rendered)."""
    return cast(dict[str, Any], phase.kind_value)


KIND = ProbeKind()
