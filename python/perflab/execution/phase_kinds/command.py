"""A command phase's execution: its command rendered (``{cores_list}`` among its values when
it is pinned), with ``perf stat`` around it when it counts events, run as a step on its
host, then the files it left fetched and the overhead commands of its metrics run right
after it with the same settings; profiled on its host, its command run under perf. Its
schema and rules: `perflab.spec.phase_kinds.command`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from perflab.execution.command import MAX_KEPT_OUTPUT, StepOutput, step_failure, step_status
from perflab.execution.failure_policy import Failure
from perflab.execution.metrics import PhaseOutput, overhead_key
from perflab.execution.phase_profile import ProfilePlan, finish_profile, start_profile
from perflab.hosts.ssh import HostError
from perflab.spec.phase_kinds.command import command
from perflab.spec.template import render_shell, render_value
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.execution.run_context import PhaseExecution
    from perflab.spec.schema import ExperimentSpec, PhaseSpec


class CommandRunner:
    def execute(self, ex: PhaseExecution, name: str, phase: PhaseSpec) -> None:
        """The phase's command, then its fetched files and overhead commands."""
        cpus = ex.runner.phase_cpus(phase, ex.values)
        values = {**ex.values, "cores_list": ",".join(map(str, cpus))} if cpus else ex.values
        rendered = render_shell(command(phase), values)
        watched = rendered if ex.watch is None else ex.watch.command(rendered)
        if watched is None:
            return  # its counters cannot be counted: the run's failure says which and why
        shell = phase.shell
        profile = start_profile(ex, name, phase, self)  # perf record around it
        if profile is not None:
            watched, shell = profile.wrap(watched, shell)
        elif ex.failure is not None:
            return
        step = _step(ex, name, watched, phase, shell, cpus)
        finish_profile(ex, name, profile)  # kept only if the phase succeeded
        if not step.ok:
            return
        if phase.fetch:
            _fetch_files(ex, phase, values)
        if phase.measure and ex.failure is None:
            ex.outputs[phase.name] = phase_output(phase, step)
            _overheads(ex, phase, values, cpus)

    def profile_plan(self, phase: PhaseSpec, mode: str) -> ProfilePlan | str:
        return ProfilePlan(host=phase.host)  # its command under perf, where it runs


def _fetch_files(ex: PhaseExecution, phase: PhaseSpec, values: dict[str, Any]) -> None:
    """The files the phase left on its host, kept as ``file:PHASE:PATH``; one that cannot
    be read fails the run."""
    executor = ex.runner.hosts[phase.host]
    for template in phase.fetch:
        path = str(render_value(template, values))
        try:
            data = executor.fetch(path, ex.runner.spec.workdir, MAX_KEPT_OUTPUT)
        except (FileNotFoundError, HostError) as e:
            why = e.one_line() if isinstance(e, HostError) else str(e)
            name = f"phase:{phase.name}"
            ex.failure = ("failed", Failure(name, "fetch", f"{name}: fetch {why}"))
            return
        ex.artifacts[keys.file(phase.name, path)] = data


def _overheads(
    ex: PhaseExecution, phase: PhaseSpec, values: dict[str, Any], cpus: tuple[int, ...] | None
) -> None:
    """Overhead commands of this phase's metrics: right after it, same settings."""
    for k, template in enumerate(overhead_commands(ex.model, phase.name)):
        name = f"overhead:{phase.name}" + (f":{k + 1}" if k else "")
        step = _step(ex, name, render_shell(template, values), phase, phase.shell, cpus)
        if not step.ok:
            return
        ex.outputs[overhead_key(phase.name, template)] = phase_output(phase, step)


def _step(
    ex: PhaseExecution,
    name: str,
    command: str,
    phase: PhaseSpec,
    shell: bool,
    cpus: tuple[int, ...] | None,
) -> StepOutput:
    """A step of the phase (its command, an overhead command) with the phase's environment,
    timeout and cores, on its host; kept with the run, its failure the run's."""
    r = ex.runner
    request = dataclasses.replace(
        r.request(name, command, ex.run_dir),
        env=r.step_env(ex.run, ex.values, phase),
        timeout=ex.budget(phase.timeout),
        shell=shell,
        cpus=cpus,
    )
    step = r.step(name, request, run=ex.run, host=phase.host)
    ex.keep_output(step)
    if not step.ok:
        ex.failure = (step_status(step), step_failure(step))
    return step


def phase_output(phase: PhaseSpec, step: StepOutput) -> PhaseOutput:
    """A command phase's output as metric extraction reads it (with its parser's values)."""
    stdout = step.stdout.decode("utf-8", "replace")
    named: dict[str, float] = {}
    if phase.parser:
        from perflab.workloads.parsers import get_parser

        named = get_parser(phase.parser).parse(stdout)
    return PhaseOutput(
        stdout, step.stderr.decode("utf-8", "replace"), step.harness_metrics(), named
    )


def overhead_commands(model: ExperimentSpec, phase_name: str) -> list[str]:
    """Distinct overhead commands of the metrics taken from this phase, in metric order."""
    return list(
        dict.fromkeys(
            x.overhead
            for x in model.metric
            if x.overhead is not None and model.metric_phase(x) == phase_name
        )
    )


RUNNER = CommandRunner()
