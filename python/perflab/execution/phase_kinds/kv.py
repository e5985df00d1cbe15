"""A kv phase's execution: the built-in key-value load generator in perflab's process
(`perflab.execution.kv_phase`) or from one load process on each of the phase's hosts
(`perflab.execution.kv_hosts`); profiled only system-wide on this machine (its load is perflab
itself), recorded beside it. Its schema and rules: `perflab.spec.phase_kinds.kv`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.execution.failure_policy import Failure
from perflab.execution.phase_profile import ProfilePlan, finish_profile, start_profile
from perflab.spec.phase_kinds.kv import table
from perflab.spec.template import render_value

if TYPE_CHECKING:
    from perflab.execution.run_context import PhaseExecution
    from perflab.spec.schema import PhaseSpec


class KvRunner:
    def execute(self, ex: PhaseExecution, name: str, phase: PhaseSpec) -> None:
        """In-process, or from the phase's hosts (their results merged)."""
        from perflab.execution.kv_hosts import run_kv_on_hosts
        from perflab.execution.kv_phase import run_kv_phase

        r = ex.runner
        timeout = ex.budget(phase.timeout)
        rendered = render_value(table(phase), ex.values)
        profile = start_profile(ex, name, phase, self)  # "system" only
        if ex.failure is not None:
            return
        if phase.load_hosts:
            executors = {h: r.hosts[h] for h in phase.load_hosts}
            result = run_kv_on_hosts(
                phase,
                rendered,
                executors,
                run_dir=ex.run_dir,
                timeout=timeout,
                stop=r.stop,
                kill_grace=ex.model.kill_grace,
            )
            ex.hosts += [f"{name}@{h}\t{host.name}" for h, host in executors.items()]
        else:
            result = run_kv_phase(phase, rendered, timeout=timeout, stop=r.stop)
        ex.artifacts.update(result.artifacts)
        ex.commands += result.commands
        if result.failure:
            ex.failure = (
                result.status,
                Failure(name, result.status, f"{name}: {result.failure}"),
            )
        finish_profile(ex, name, profile)  # kept only if the phase succeeded
        if result.failure:
            return
        if phase.measure:
            assert result.output is not None  # a kv phase that did not fail has its output
            ex.outputs[phase.name] = result.output

    def profile_plan(self, phase: PhaseSpec, mode: str) -> ProfilePlan | str:
        if mode == "process":
            return (
                f"profile: phase {phase.name} is a kv phase (its load is perflab itself): not "
                'profiled; profile = "system" records this whole machine during it'
            )
        return ProfilePlan(host=None, beside=True)  # this machine, while the load runs


RUNNER = KvRunner()
