"""The cores of pinned phases (``cores = N`` or a template of N): every count the phases can
ask for is picked once, before any run, so that a count the machine cannot give fails early."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from perflab.errors import PerflabError
from perflab.spec.template import render_value

if TYPE_CHECKING:
    from perflab.platform import CoreChoice
    from perflab.spec.matrix import Cell
    from perflab.spec.schema import ExperimentSpec, PhaseSpec, VariantSpec


def core_count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PerflabError(f"cores = {value!r}: needs a whole number of cores ≥ 1")
    return value


def core_counts(
    model: ExperimentSpec, cells: Collection[Cell], variants: Collection[VariantSpec]
) -> set[int]:
    """Every core count a phase asks for, in any cell and variant."""
    counts: set[int] = set()
    for p in model.phase:
        if isinstance(p.cores, int):
            counts.add(p.cores)
        elif isinstance(p.cores, str):
            for cell in cells:
                for v in variants:
                    counts.add(
                        core_count(
                            render_value(p.cores, {**model.params, **cell.values, **v.params})
                        )
                    )
    return counts


def phase_cpus(
    phase: PhaseSpec | None, values: dict[str, Any] | None, core_choices: dict[int, CoreChoice]
) -> tuple[int, ...] | None:
    """The CPUs picked for the phase's ``cores`` (None: the phase is not pinned)."""
    if phase is None or not phase.cores:
        return None
    n = (
        phase.cores
        if isinstance(phase.cores, int)
        else core_count(render_value(phase.cores, values or {}))
    )
    return tuple(core_choices[n].cpus)
