"""One run, start to record: before_each → variant setup → phases (in the order written)
→ variant teardown → after_each, then the metrics and one committed row.

A failing or timed-out step marks the run failed and skips the steps after it; cleanup
steps (teardown, after_each) run whatever happened and are not cut short by a stop
request. An interrupted run goes back to pending. `perflab.execution.runner.Runner` owns the
experiment around it (signals, cores, the held processes, the store's lock) and is the
`RunContext` a run executes in. Each phase is run by its kind's runner
(`perflab.execution.phase_kinds`), given this run as its `PhaseExecution`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.errors import StoreError
from perflab.execution.command import StepOutput, step_failure, step_status
from perflab.execution.failure_policy import Failure
from perflab.execution.metrics import MetricExtractionError, PhaseOutput, extract, overhead_key
from perflab.execution.phase_kinds import runner_of
from perflab.execution.phase_watch import PhaseWatch
from perflab.execution.run_context import PhaseContext
from perflab.execution.variant_kernel import Readiness
from perflab.spec.suffixes import GROSS_SUFFIX, OVERHEAD_SUFFIX
from perflab.spec.template import render_shell
from perflab.store import RunRow
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.execution.service_scopes import ServiceScopes
    from perflab.execution.services import ServiceRun
    from perflab.hosts.base import Host
    from perflab.spec.schema import ExperimentSpec, HookSpec, PhaseSpec, VariantSpec
    from perflab.store import Database


@dataclass(frozen=True)
class RunOutcome:
    status: str  # ok | failed | timeout | interrupted
    reason: str | None
    metrics: dict[str, float]
    seconds: float
    failure: Failure | None = None  # how it failed (for the failure policy)


class RunContext(PhaseContext, Protocol):
    """What a run needs from the experiment around it (`perflab.execution.runner.Runner`): what
    its phases need (`PhaseContext`: hosts, steps, profiles, the stop request), and more."""

    store: Database
    eid: int
    variants: dict[str, VariantSpec]
    device: str | None  # a pool's device the run runs on (``NAME[SLOT]``), else None

    @property
    def executor(self) -> Host: ...

    def run_values(self, run: RunRow, run_dir: Path) -> dict[str, Any]: ...

    def stop_run_leftovers(self, run: RunRow) -> list[str]: ...

    ports: dict[str, int]
    services: ServiceScopes  # the [[service]] tables: ports, starting a scope's services

    def stop_services(self, services: dict[str, ServiceRun]) -> dict[str, bytes]: ...


class RunExecution:
    """The state of one run while it executes: its outputs so far and its first failure."""

    def __init__(
        self,
        runner: RunContext,
        run: RunRow,
        scratch: Path,
        boot: Readiness | None = None,
    ):
        self.runner = runner
        self.run = run
        self.model = runner.spec.model
        self.run_dir = scratch / f"run-{run.order_index + 1}"
        self.artifacts: dict[str, bytes] = {}
        self.outputs: dict[str, PhaseOutput] = {}
        self.failure: tuple[str, Failure] | None = None  # (status, how)
        self.t0 = 0.0
        self.deadline: float | None = None
        self.values: dict[str, Any] = {}
        self.hosts: list[str] = []  # "step<TAB>host" of every command step, in order
        self.commands: list[dict[str, object]] = []  # what each command step ran, in order
        self.watch: PhaseWatch | None = None  # counters and monitors of the phase running
        self.boot = boot or Readiness()  # its variant built and its hosts booted, or why not

    def execute(self) -> RunOutcome:
        """Run the steps, clean up, extract the metrics and commit the run."""
        r, run, m = self.runner, self.run, self.model
        self.run_dir.mkdir()
        r.store.start_run(run.id, r.executor.name, r.device)
        self.t0 = time.monotonic()
        self.deadline = None if m.timeout is None else self.t0 + m.timeout
        self.values = r.run_values(run, self.run_dir)
        variant = r.variants[run.variant]
        ready = self.boot  # its hosts booted as it needs, before its services
        self.artifacts.update(ready.artifacts)
        if ready.kernels:  # the host and kernel the run's variant ran on
            self.artifacts[keys.KERNEL] = (ready.kernels + "\n").encode()
        if ready.why:  # never a run on another kernel than its variant's, or an unbuilt one
            kind = "wrong kernel" if ready.step == "boot" else "failed"
            self.failure = ("failed", Failure(ready.step, kind, f"{ready.step}: {ready.why}"))
        services: dict[str, ServiceRun] = {}
        started = not any(s.scope == "run" for s in self.model.service)
        for name, command, phase in self._steps(variant):
            if self.failure is not None:
                break
            if phase is not None and not started:
                started = True
                self._start_services(services)  # after setup, before the first phase
                if self.failure is not None:
                    break
            with PhaseWatch(self, phase):  # perf counters, /proc monitors (phase_watch.py)
                if self.failure is not None:
                    pass  # the watch could not start (a device's counters unread)
                elif phase is not None:
                    runner_of(phase).execute(self, name, phase)  # by its kind (phase_kinds/)
                else:
                    assert command is not None  # a hook or setup step has its command
                    self._command_step(name, command)
        self.artifacts.update(r.stop_services(services))
        self._cleanup(variant)
        for host, console in r.hosts.take_consoles().items():  # its boots' and its own
            self.artifacts[keys.console(host)] = console
        left = r.stop_run_leftovers(run)
        if left:
            self.artifacts[keys.LEFTOVERS] = ("\n".join(left) + "\n").encode()
        # which host each step ran on, and the labgrid place lending a host (JSON)
        lent = [f"labgrid:{h}\t{json.dumps(p)}" for h, p in r.hosts.places().items()]
        if self.hosts or lent:
            self.artifacts[keys.HOSTS] = ("\n".join([*self.hosts, *lent]) + "\n").encode()
        if self.commands:  # each command step as run: rendered command, host, env added
            self.artifacts[keys.COMMANDS] = (json.dumps(self.commands, indent=1) + "\n").encode()
        metrics = self._metrics() if self.failure is None else {}
        seconds = time.monotonic() - self.t0
        shutil.rmtree(self.run_dir, ignore_errors=True)
        return self._record(metrics, seconds)

    # -- steps
    def _steps(self, variant: VariantSpec) -> list[tuple[str, str | None, PhaseSpec | None]]:
        """(step name, command, phase) of the run's steps before cleanup, in order."""
        m = self.model
        steps: list[tuple[str, str | None, PhaseSpec | None]] = []
        if m.before_each:
            steps.append(("before_each", m.before_each.command, None))
        if variant.setup:
            steps.append(("setup", variant.setup, None))
        steps += [(f"phase:{p.name}", None, p) for p in m.phase]
        return steps

    def _start_services(self, services: dict[str, ServiceRun]) -> None:
        """The run's own services (scope "run"); their ports join the run's values."""
        from perflab.execution.services import ServiceError

        try:
            env = self.runner.step_env(self.run, self.values)
            self.runner.services.start("run", self.values, self.run_dir, services, env)
        except ServiceError as e:
            self.failure = ("failed", Failure("service", "not ready", e.one_line()))
        if self.failure is None and self.runner.stop.is_set():
            # a stop request ended the wait for its services: the run goes back to pending,
            # never measured without them (a quick phase could finish before it looks)
            reason = "stopped while its services got ready"
            self.failure = ("interrupted", Failure("service", "interrupted", reason))
        self.values.update(self.runner.ports)

    def _host_of(self, name: str) -> str | None:
        """Where a step other than a phase runs: the variant's (setup, teardown) or the
        hook's `on`."""
        m = self.model
        if name in ("setup", "teardown"):
            return self.runner.variants[self.run.variant].on
        hook: HookSpec | None = getattr(m, name, None)
        return hook.on if hook is not None else None

    def budget(self, limit: float | None) -> float | None:
        """A step's timeout: its own limit, cut to what is left of the run's timeout."""
        left = None if self.deadline is None else max(0.001, self.deadline - time.monotonic())
        return left if limit is None else (limit if left is None else min(limit, left))

    def keep_output(self, step: StepOutput) -> None:
        """Keeps a step's output and record with the run."""
        self.hosts.append(f"{step.name}\t{step.host}")
        self.commands.append(step.record())
        if step.stdout:
            self.artifacts[keys.stream("stdout", step.name)] = step.stdout
        if step.stderr:
            self.artifacts[keys.stream("stderr", step.name)] = step.stderr

    def _command_step(self, name: str, command: str) -> None:
        """A shell step before the phases: before_each, the variant's setup."""
        r, run = self.runner, self.run
        request = dataclasses.replace(
            r.request(name, render_shell(command, self.values), self.run_dir),
            env=r.step_env(run, self.values),
            timeout=self.budget(None),
        )
        step = r.step(name, request, run=run, host=self._host_of(name))
        self.keep_output(step)
        if not step.ok:
            self.failure = (step_status(step), step_failure(step))

    def _cleanup(self, variant: VariantSpec) -> None:
        """Teardown and after_each: whatever happened, and not cut short by a stop request."""
        r, run, m = self.runner, self.run, self.model
        cleanup: list[tuple[str, str]] = []
        if variant.teardown:
            cleanup.append(("teardown", variant.teardown))
        if m.after_each:
            cleanup.append(("after_each", m.after_each.command))
        for name, command in cleanup:
            request = dataclasses.replace(
                r.request(name, render_shell(command, self.values), self.run_dir),
                env=r.step_env(run, self.values),
                timeout=m.timeout,
                stop=None,
            )
            step = r.step(name, request, run=run, host=self._host_of(name))
            self.keep_output(step)
            if not step.ok and self.failure is None:
                self.failure = ("failed", step_failure(step))

    # -- results
    def _metrics(self) -> dict[str, float]:
        """The run's metrics; a failure to extract them becomes the run's failure."""
        try:
            return net_metrics(self.model, self.outputs)
        except MetricExtractionError as e:
            self.failure = ("failed", Failure("metrics", "not found", str(e)))
        except Exception as e:  # a parser bug must not kill the experiment
            self.failure = (
                "failed",
                Failure("metrics", type(e).__name__, f"metric extraction: {type(e).__name__}: {e}"),
            )
        return {}

    def _record(self, metrics: dict[str, float], seconds: float) -> RunOutcome:
        """Commit the run (or put an interrupted one back to pending) and say how it went."""
        r, run, m, failure = self.runner, self.run, self.model, self.failure
        if failure is not None and failure[0] == "interrupted":
            r.store.reset_run(run.id)
            return RunOutcome("interrupted", failure[1].reason, {}, seconds)
        status, reason = ("ok", None) if failure is None else (failure[0], failure[1].reason)
        if (
            status == "timeout"
            and m.timeout is not None
            and self.deadline is not None
            and time.monotonic() >= self.deadline
        ):
            reason = f"{reason} (run timeout {m.timeout:g} s)"
        try:
            r.store.finish_run(
                run.id, status, reason, metrics, self.artifacts, r.eid, r.executor.name
            )
        except StoreError as e:
            # Nothing of this run was saved (the write rolled back whole). Mark it failed if the
            # store still takes a small write, so it is not redone blindly; either way, stop.
            with contextlib.suppress(StoreError):
                r.store.mark_run_failed(run.id, f"not saved: {e.message}"[:500])
            raise
        how = None if failure is None else Failure(failure[1].step, failure[1].kind, reason or "")
        return RunOutcome(status, reason, metrics, seconds, how)


def net_metrics(model: ExperimentSpec, outputs: dict[str, PhaseOutput]) -> dict[str, float]:
    """Each metric's value; with an overhead, the net value (gross − overhead of the same
    run), and the two parts recorded beside it as ``name.gross`` and ``name.overhead``."""
    out: dict[str, float] = {}
    for metric in model.metric:
        phase = model.metric_phase(metric)
        value = extract(metric, outputs[phase])
        if metric.overhead is not None:
            source = outputs[overhead_key(phase, metric.overhead)]
        elif metric.overhead_phase is not None:
            source = outputs[metric.overhead_phase]
        else:
            out[metric.name] = value
            continue
        try:
            overhead = extract(metric, source)
        except MetricExtractionError as e:
            raise MetricExtractionError(f"overhead of {e}") from None
        out[metric.name] = value - overhead
        out[metric.name + GROSS_SUFFIX] = value
        out[metric.name + OVERHEAD_SUFFIX] = overhead
    return out
