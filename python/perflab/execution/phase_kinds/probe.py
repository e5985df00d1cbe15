"""A probe phase's execution: the platform microbenchmark in perflab's own process (Rust,
the GIL released), pinned to the phase's first picked core; never profiled (what would
be sampled is perflab). Its schema and rules: `perflab.spec.phase_kinds.probe`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.errors import PerflabError
from perflab.execution.failure_policy import Failure
from perflab.execution.metrics import PhaseOutput
from perflab.execution.phase_profile import ProfilePlan, start_profile
from perflab.spec.phase_kinds.probe import table
from perflab.spec.template import render_value

if TYPE_CHECKING:
    from perflab.execution.run_context import PhaseExecution
    from perflab.spec.schema import PhaseSpec


class ProbeRunner:
    def execute(self, ex: PhaseExecution, name: str, phase: PhaseSpec) -> None:
        from perflab.workloads.probes import phase_metrics

        start_profile(ex, name, phase, self)  # says once that it is not profiled
        cpus = ex.runner.phase_cpus(phase, ex.values)
        try:
            named, _units = phase_metrics(
                render_value(table(phase), ex.values), core=cpus[0] if cpus else None
            )
        except PerflabError as e:
            ex.failure = ("failed", Failure(name, "failed", f"{name}: {e.one_line()}"))
            return
        if phase.measure:
            ex.outputs[phase.name] = PhaseOutput("", "", {}, named)

    def profile_plan(self, phase: PhaseSpec, mode: str) -> ProfilePlan | str:
        return f"profile: phase {phase.name} is a probe (in perflab's process): not profiled"


RUNNER = ProbeRunner()
