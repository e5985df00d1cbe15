"""One run, start to record: before_each → variant setup → phases (in the order written)
→ variant teardown → after_each, then the metrics and one committed row.

A failing or timed-out step marks the run failed and skips the steps after it; cleanup
steps (teardown, after_each) run whatever happened and are not cut short by a stop
request. An interrupted run goes back to pending. `perflab.run.runner.Runner` owns the
experiment around it (signals, cores, the held processes, the store's lock) and is the
`RunContext` a run executes in.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.errors import PerflabError, StoreError
from perflab.hosts.ssh import HostError
from perflab.run.command import StepOutput
from perflab.run.failure_policy import Failure
from perflab.run.metrics import MetricExtractionError, PhaseOutput, extract
from perflab.run.phase_profile import finish_profile, start_profile
from perflab.run.phase_watch import PhaseWatch
from perflab.spec.schema import GROSS_SUFFIX, OVERHEAD_SUFFIX
from perflab.spec.template import render_shell, render_value
from perflab.store import RunRow

if TYPE_CHECKING:
    import threading

    from perflab.hosts.base import Host
    from perflab.observe.profile import Profiles
    from perflab.run.experiment_hosts import Hosts
    from perflab.run.services import ServiceRun
    from perflab.spec import Spec
    from perflab.spec.schema import ExperimentSpec, HookSpec, PhaseSpec, VariantSpec
    from perflab.store import Store


@dataclass(frozen=True)
class RunOutcome:
    status: str  # ok | failed | timeout | interrupted
    reason: str | None
    metrics: dict[str, float]
    seconds: float
    failure: Failure | None = None  # how it failed (for the failure policy)


class RunContext(Protocol):
    """What a run needs from the experiment around it (`perflab.run.runner.Runner`)."""

    spec: Spec
    store: Store
    eid: int
    variants: dict[str, VariantSpec]
    stop: threading.Event

    @property
    def executor(self) -> Host: ...

    hosts: Hosts  # every machine of the experiment by its spec name
    profiles: Profiles  # the phases' perf profiles (perflab.observe.profile)

    def run_values(self, run: RunRow, run_dir: Path) -> dict[str, Any]: ...

    def step_env(
        self, run: RunRow | None, values: dict[str, Any] | None, phase: PhaseSpec | None = None
    ) -> dict[str, str]: ...

    def phase_cpus(
        self, phase: PhaseSpec | None, values: dict[str, Any] | None = None
    ) -> tuple[int, ...] | None: ...

    def step(
        self,
        name: str,
        command: str,
        env: dict[str, str],
        run_dir: Path,
        timeout: float | None,
        run: RunRow | None = None,
        shell: bool = True,
        stoppable: bool = True,
        cpus: tuple[int, ...] | None = None,
        host: str | None = None,
    ) -> StepOutput: ...

    def stop_run_leftovers(self, run: RunRow) -> list[str]: ...

    ports: dict[str, int]

    def start_services(
        self,
        scope: str,
        values: dict[str, Any],
        run_dir: Path,
        into: dict[str, ServiceRun],
        env: dict[str, str] | None = None,
    ) -> None: ...

    def stop_services(self, services: dict[str, ServiceRun]) -> dict[str, bytes]: ...


class RunExecution:
    """The state of one run while it executes: its outputs so far and its first failure."""

    def __init__(
        self,
        runner: RunContext,
        run: RunRow,
        scratch: Path,
        boot: tuple[str | None, str | None] = (None, None),
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
        self.boot = boot  # (why its hosts are not as it needs, their kernel record)

    def execute(self) -> RunOutcome:
        """Run the steps, clean up, extract the metrics and commit the run."""
        r, run, m = self.runner, self.run, self.model
        self.run_dir.mkdir()
        r.store.start_run(run.id, r.executor.name)
        self.t0 = time.monotonic()
        self.deadline = None if m.timeout is None else self.t0 + m.timeout
        self.values = r.run_values(run, self.run_dir)
        variant = r.variants[run.variant]
        why, kernel = self.boot  # its hosts booted as it needs, before its services
        if kernel:  # the host and kernel the run's variant ran on
            self.artifacts["kernel"] = (kernel + "\n").encode()
        if why:  # never a run on another kernel than its variant's
            self.failure = ("failed", Failure("boot", "wrong kernel", f"boot: {why}"))
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
                if phase is not None and phase.probe is not None:
                    self._probe_phase(name, phase)
                elif phase is not None and phase.kv is not None:
                    self._kv_phase(name, phase)
                else:
                    self._command_step(name, command, phase)
        self.artifacts.update(r.stop_services(services))
        self._cleanup(variant)
        for host, console in r.hosts.take_consoles().items():  # its boots' and its own
            self.artifacts[f"console:{host}"] = console
        left = r.stop_run_leftovers(run)
        if left:
            self.artifacts["leftovers"] = ("\n".join(left) + "\n").encode()
        if self.hosts:  # which host each step ran on
            self.artifacts["hosts"] = ("\n".join(self.hosts) + "\n").encode()
        if self.commands:  # each command step as run: rendered command, host, env added
            self.artifacts["commands"] = (json.dumps(self.commands, indent=1) + "\n").encode()
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
        from perflab.run.services import ServiceError

        try:
            env = self.runner.step_env(self.run, self.values)
            self.runner.start_services("run", self.values, self.run_dir, services, env)
        except ServiceError as e:
            self.failure = ("failed", Failure("service", "not ready", e.one_line()))
        if self.failure is None and self.runner.stop.is_set():
            # a stop request ended the wait for its services: the run goes back to pending,
            # never measured without them (a quick phase could finish before it looks)
            reason = "stopped while its services got ready"
            self.failure = ("interrupted", Failure("service", "interrupted", reason))
        self.values.update(self.runner.ports)

    def _host_of(self, name: str, phase: PhaseSpec | None) -> str | None:
        """Where a step runs: its phase's, the variant's (setup, teardown) or the hook's `on`."""
        m = self.model
        if phase is not None:
            return phase.host
        if name in ("setup", "teardown"):
            return self.runner.variants[self.run.variant].on
        hook: HookSpec | None = getattr(m, name, None)
        return hook.on if hook is not None else None

    def _budget(self, limit: float | None) -> float | None:
        """A step's timeout: its own limit, cut to what is left of the run's timeout."""
        left = None if self.deadline is None else max(0.001, self.deadline - time.monotonic())
        return left if limit is None else (limit if left is None else min(limit, left))

    def _keep_output(self, step: StepOutput) -> None:
        self.hosts.append(f"{step.name}\t{step.host}")
        self.commands.append(step.record())
        if step.stdout:
            self.artifacts[f"stdout:{step.name}"] = step.stdout
        if step.stderr:
            self.artifacts[f"stderr:{step.name}"] = step.stderr

    def _probe_phase(self, name: str, phase: PhaseSpec) -> None:
        """A platform probe in-process (Rust, GIL released), pinned to the phase's first picked core."""
        from perflab.workloads.probes import phase_metrics

        cpus = self.runner.phase_cpus(phase, self.values)
        try:
            named, _units = phase_metrics(
                render_value(phase.probe, self.values), core=cpus[0] if cpus else None
            )
        except PerflabError as e:
            self.failure = ("failed", Failure(name, "failed", f"{name}: {e.one_line()}"))
            return
        if phase.measure:
            self.outputs[phase.name] = PhaseOutput("", "", {}, named)

    def _kv_phase(self, name: str, phase: PhaseSpec) -> None:
        """The built-in key-value load generator: in-process, or from the phase's hosts."""
        from perflab.run.kv_hosts import run_kv_on_hosts
        from perflab.run.kv_phase import run_kv_phase

        timeout = self._budget(phase.timeout)
        table = render_value(phase.kv, self.values)
        profile = start_profile(self, name, phase)  # "system" only (phase_profile.py)
        if self.failure is not None:
            return
        if phase.load_hosts:
            executors = {h: self.runner.hosts[h] for h in phase.load_hosts}
            result = run_kv_on_hosts(
                phase,
                table,
                executors,
                run_dir=self.run_dir,
                timeout=timeout,
                stop=self.runner.stop,
                kill_grace=self.model.kill_grace,
            )
            self.hosts += [f"{name}@{h}\t{ex.name}" for h, ex in executors.items()]
        else:
            result = run_kv_phase(phase, table, timeout=timeout, stop=self.runner.stop)
        self.artifacts.update(result.artifacts)
        self.commands += result.commands
        if result.failure:
            self.failure = (
                result.status,
                Failure(name, result.status, f"{name}: {result.failure}"),
            )
        finish_profile(self, name, profile)  # kept only if the phase succeeded
        if result.failure:
            return
        if phase.measure:
            assert result.output is not None  # a kv phase that did not fail has its output
            self.outputs[phase.name] = result.output

    def _command_step(self, name: str, command: str | None, phase: PhaseSpec | None) -> None:
        """A shell step (before_each, setup) or a command phase with its overhead commands."""
        r, run = self.runner, self.run
        cpus = r.phase_cpus(phase, self.values)
        phase_values = (
            {**self.values, "cores_list": ",".join(map(str, cpus))} if cpus else self.values
        )
        text = phase.command if phase else command
        assert text is not None  # a command phase (validated) or a hook/setup step with one
        rendered = render_shell(text, phase_values)
        watched = rendered if self.watch is None else self.watch.command(rendered)
        if watched is None:
            return  # its counters cannot be counted: the run's failure says which and why
        shell = phase.shell if phase else True
        profile = start_profile(self, name, phase)  # perf record around it (phase_profile.py)
        if profile is not None:
            watched, shell = profile.wrap(watched, shell)
        elif self.failure is not None:
            return
        step = r.step(
            name,
            watched,
            r.step_env(run, self.values, phase),
            self.run_dir,
            self._budget(phase.timeout if phase else None),
            run=run,
            shell=shell,
            cpus=cpus,
            host=self._host_of(name, phase),
        )
        self._keep_output(step)
        if not step.ok:
            self.failure = (_status_of(step), _failure_of(step))
        finish_profile(self, name, profile)  # kept only if the phase succeeded
        if not step.ok:
            return
        if phase is not None and phase.fetch:
            self._fetch_files(phase, phase_values)
        if phase is not None and phase.measure and self.failure is None:
            self.outputs[phase.name] = phase_output(phase, step)
            self._overheads(phase, phase_values, cpus)

    def _fetch_files(self, phase: PhaseSpec, values: dict[str, Any]) -> None:
        """The files the phase left on its host, kept as ``file:PHASE:PATH``; one that cannot
        be read fails the run."""
        from perflab.run.command import MAX_KEPT_OUTPUT

        executor = self.runner.hosts[phase.host]
        for template in phase.fetch:
            path = str(render_value(template, values))
            try:
                data = executor.fetch(path, self.runner.spec.workdir, MAX_KEPT_OUTPUT)
            except (FileNotFoundError, HostError) as e:
                why = e.one_line() if isinstance(e, HostError) else str(e)
                name = f"phase:{phase.name}"
                self.failure = ("failed", Failure(name, "fetch", f"{name}: fetch {why}"))
                return
            self.artifacts[f"file:{phase.name}:{path}"] = data

    def _overheads(
        self, phase: PhaseSpec, phase_values: dict[str, Any], cpus: tuple[int, ...] | None
    ) -> None:
        """Overhead commands of this phase's metrics: right after it, same settings."""
        r, run = self.runner, self.run
        for k, template in enumerate(overhead_commands(self.model, phase.name)):
            step = r.step(
                f"overhead:{phase.name}" + (f":{k + 1}" if k else ""),
                render_shell(template, phase_values),
                r.step_env(run, self.values, phase),
                self.run_dir,
                self._budget(phase.timeout),
                run=run,
                shell=phase.shell,
                cpus=cpus,
                host=phase.host,
            )
            self._keep_output(step)
            if not step.ok:
                self.failure = (_status_of(step), _failure_of(step))
                return
            self.outputs[overhead_key(phase.name, template)] = phase_output(phase, step)

    def _cleanup(self, variant: VariantSpec) -> None:
        """Teardown and after_each: whatever happened, and not cut short by a stop request."""
        r, run, m = self.runner, self.run, self.model
        cleanup: list[tuple[str, str]] = []
        if variant.teardown:
            cleanup.append(("teardown", variant.teardown))
        if m.after_each:
            cleanup.append(("after_each", m.after_each.command))
        for name, command in cleanup:
            step = r.step(
                name,
                render_shell(command, self.values),
                r.step_env(run, self.values),
                self.run_dir,
                m.timeout,
                run=run,
                stoppable=False,
                host=self._host_of(name, None),
            )
            self._keep_output(step)
            if not step.ok and self.failure is None:
                self.failure = ("failed", _failure_of(step))

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


def overhead_key(phase: str, command: str) -> str:
    """Where an overhead command's output is kept among the run's phase outputs."""
    return f"overhead:{phase}:{command}"


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


def _status_of(step: StepOutput) -> str:
    if step.process is not None and step.process.interrupted:
        return "interrupted"
    if step.process is not None and step.process.timed_out:
        return "timeout"
    return "failed"


def _failure_of(step: StepOutput) -> Failure:
    kind = step.process.describe_failure() if step.process is not None else "could not start"
    return Failure(step.name, kind, step.failure())
