"""What a phase's runner (`perflab.execution.phase_kinds`) may use: the run it is a phase of
(`PhaseExecution`, which `perflab.execution.run_execution.RunExecution` is) and the experiment
around that run (`PhaseContext`, which `perflab.execution.runner.Runner` is)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from pathlib import Path

    from perflab.execution.command import StepOutput
    from perflab.execution.experiment_hosts import Hosts
    from perflab.execution.failure_policy import Failure
    from perflab.execution.metrics import PhaseOutput
    from perflab.execution.phase_watch import PhaseWatch
    from perflab.hosts.step import StepRequest
    from perflab.observe.profile import Profiles
    from perflab.spec import Spec
    from perflab.spec.schema import ExperimentSpec, PhaseSpec
    from perflab.store import RunRow


class PhaseContext(Protocol):
    """What a phase needs from the experiment around its run: its machines, its steps,
    its profiles, its stop request."""

    spec: Spec
    stop: threading.Event  # the experiment's stop request (Ctrl-C, SIGTERM)
    hosts: Hosts  # every machine of the experiment by its spec name
    profiles: Profiles  # the phases' perf profiles (perflab.observe.profile)
    say_once: Callable[[str], None]  # a note that holds for every run, said once

    def step_env(
        self, run: RunRow | None, values: dict[str, Any] | None, phase: PhaseSpec | None = None
    ) -> dict[str, str]: ...

    def phase_cpus(
        self, phase: PhaseSpec | None, values: dict[str, Any] | None = None
    ) -> tuple[int, ...] | None: ...

    def request(self, name: str, command: str, folder: Path) -> StepRequest: ...

    def step(
        self, name: str, request: StepRequest, *, run: RunRow | None = None, host: str | None = None
    ) -> StepOutput: ...


class PhaseExecution(Protocol):
    """The run a phase executes in: what it has produced so far and its first failure. A
    phase's runner adds to it: its outputs (``outputs[phase.name]`` when measured), its
    artifacts and ``commands`` records, and ``failure`` when the phase fails."""

    @property
    def runner(self) -> PhaseContext: ...

    run: RunRow
    model: ExperimentSpec
    run_dir: Path  # the run's scratch folder here
    values: dict[str, Any]  # what the run's templates are rendered with
    artifacts: dict[str, bytes]
    outputs: dict[str, PhaseOutput]  # per measured phase: what metrics are taken from
    commands: list[dict[str, object]]  # what each step ran (`StepOutput.record`)
    hosts: list[str]  # "step<TAB>host" of every step, in order
    failure: tuple[str, Failure] | None  # (status, how) of the run's first failure
    watch: PhaseWatch | None  # the counters and monitors of the phase running

    def budget(self, limit: float | None) -> float | None:
        """A step's timeout: its own ``limit``, cut to what is left of the run's."""
        ...

    def keep_output(self, step: StepOutput) -> None:
        """Keeps a step's output and record with the run."""
        ...
