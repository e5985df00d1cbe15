"""Each kind of phase at the run layer: its execution and how it is profiled (`PhaseRunner`),
one module per kind — ``perflab/run/phase_kinds/NAME.py``, defining ``RUNNER`` — beside its
other half, ``perflab/spec/phase_kinds/NAME.py`` (the registry, its schema and rules). A run
asks `runner_of` for a phase's runner; nothing else here names a kind."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol, cast

from perflab.spec.phase_kinds import kind_of

if TYPE_CHECKING:
    from perflab.execution.phase_profile import ProfilePlan
    from perflab.execution.run_context import PhaseExecution
    from perflab.spec.schema import PhaseSpec


class PhaseRunner(Protocol):
    """How a kind of phase runs (`perflab.spec.phase_kinds.PhaseKind.runner`)."""

    def execute(self, ex: PhaseExecution, name: str, phase: PhaseSpec) -> None:
        """Runs ``phase`` as the run's step ``name``: its output into ``ex.outputs`` when
        it is measured, what it leaves into ``ex.artifacts``, its failure into
        ``ex.failure`` (then the run's next steps are skipped)."""
        ...

    def profile_plan(self, phase: PhaseSpec, mode: str) -> ProfilePlan | str:
        """How ``phase`` is profiled in ``mode`` ("process" or "system"), or the note said
        once when it is not (`perflab.execution.phase_profile.start_profile`)."""
        ...


def runner_of(phase: PhaseSpec) -> PhaseRunner:
    """The runner of a phase's kind: its module's ``RUNNER``, or the runner it was given."""
    runner = kind_of(phase).runner
    if isinstance(runner, str):
        runner = importlib.import_module(runner).RUNNER
    return cast("PhaseRunner", runner)
