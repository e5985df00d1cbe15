"""The runner loop: executes an experiment's pending runs in order, one committed at a time.

Per run (run_execution.py): before_each → variant setup → phases (in the order written) →
variant teardown → after_each. A failing or timed-out step marks the run failed (cleanup
steps still run); the experiment then goes on or stops as ``on_failure`` says. SIGINT/SIGTERM stop the
command in flight, put that run back to pending, and leave the experiment resumable.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from perflab.errors import PerflabError, StoreError
from perflab.run.command import StepOutput, run_command
from perflab.run.executor import LocalExecutor, PinningExecutor
from perflab.run.failure_policy import FailurePolicy
from perflab.run.hosts import Hosts
from perflab.run.process import HeldProcesses, kill_leftover_group, process_start_time
from perflab.run.run_execution import RunExecution, RunOutcome
from perflab.run.scratch import make_scratch, remove_stale_scratch, stop_all
from perflab.run.services import ServiceRun, free_port
from perflab.run.ssh import HostError
from perflab.spec import Spec
from perflab.spec.matrix import Cell, expand_matrix
from perflab.spec.schema import FREE_PORT
from perflab.spec.template import render_shell, render_value
from perflab.store import RunRow, Store

if TYPE_CHECKING:
    from perflab.platform import CoreChoice
    from perflab.spec.schema import PhaseSpec

#: A signal's disposition, as `signal.signal` takes and returns it.
SignalHandler = Callable[[int, FrameType | None], Any] | int | None


class Observer(Protocol):
    """Progress reporting; the CLI implements it with a progress bar."""

    def started(self, experiment_id: int, total: int, done: int, resumed: bool) -> None: ...
    def run_started(self, run: RunRow, index: int, total: int) -> None: ...
    def run_finished(self, run: RunRow, outcome: RunOutcome, index: int, total: int) -> None: ...
    def message(self, text: str) -> None: ...
    def replanned(self, total: int, projected_total: int) -> None: ...  # adaptive blocks added
    def finished(self, summary: ExperimentOutcome) -> None: ...


class SilentObserver:
    def started(self, *a: object) -> None: ...
    def replanned(self, *a: object) -> None: ...
    def run_started(self, *a: object) -> None: ...
    def run_finished(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def finished(self, *a: object) -> None: ...


@dataclass
class ExperimentOutcome:
    experiment_id: int
    status: str  # complete | interrupted | aborted
    counts: dict[str, int] = field(default_factory=dict)
    message: str | None = None


class Runner:
    def __init__(
        self,
        store: Store,
        spec: Spec,
        experiment_id: int,
        *,
        executor: PinningExecutor | None = None,
        observer: Observer | None = None,
        handle_signals: bool = True,
        max_failures: int | None = None,
    ):
        self.store = store
        self.spec = spec
        self.eid = experiment_id
        self.executor: PinningExecutor = executor or LocalExecutor()
        # The experiment's machines: this one and every [hosts.NAME] (connected in run()).
        self.hosts = Hosts(self.executor, spec.model.hosts)
        self.observer = observer or SilentObserver()
        self.handle_signals = handle_signals
        self.stop = threading.Event()
        self.cells: dict[str, Cell] = {c.key: c for c in expand_matrix(spec.model.matrix)}
        self.core_choices: dict[int, CoreChoice] = {}  # N → CoreChoice, picked once per experiment
        self.variants = {v.name: v for v in spec.model.variant}
        # Processes finished steps left running, held until their scope ends: the run's
        # steps' until the run's end, before_all's until the experiment's end.
        self._held: list[HeldProcesses] = []
        self._experiment_held: list[HeldProcesses] = []
        self._told_leftovers = False
        # Services of scope "experiment" and "variant" now running, and their ports.
        self._services: dict[str, ServiceRun] = {}
        self._service_variant: str | None = None
        self.ports: dict[str, int] = {}
        m = spec.model
        self.policy = FailurePolicy(
            m.max_failures if max_failures is None else max_failures, m.max_failure_share
        )

    # -- public
    def run(self) -> ExperimentOutcome:
        holder = self.store.claim(self.eid, os.getpid(), self.executor.host)
        if holder:
            raise PerflabError(
                f"experiment {self.eid} is being run by process {holder[0]} on this host"
            )
        previous = self._install_signals()
        remove_stale_scratch()
        scratch = make_scratch()
        try:
            try:  # an unreachable host stops the experiment before any run
                self.hosts.prepare()
            except HostError as e:
                raise HostError(
                    e.message, hint=f"no run started; resume with `perflab run --resume {self.eid}`"
                ) from None
            return self._run(scratch)
        finally:  # whatever ended the experiment, what its steps left running goes now
            self.stop_services(self._services)
            for held in (self._held, self._experiment_held):
                stop_all(held)
            self.hosts.close()
            self._restore_signals(previous)
            shutil.rmtree(scratch, ignore_errors=True)
            with contextlib.suppress(StoreError):  # a full disk must not hide the first error
                self.store.release(self.eid)

    def request_stop(self) -> None:
        self.stop.set()

    # -- internals
    def _run(self, scratch: Path) -> ExperimentOutcome:
        self._recover_crashed_runs()
        runs = self.store.runs(self.eid)
        pending = [r for r in runs if r.status == "pending"]
        total, done = len(runs), len(runs) - len(pending)
        self.store.set_status(self.eid, "running")
        self.observer.started(self.eid, total, done, done > 0)
        self._pick_cores()
        self._capture_environment()
        m = self.spec.model
        if m.before_all:
            step = self.step(
                "before_all",
                render_shell(m.before_all.command, self._experiment_values()),
                self.step_env(None, None),
                scratch,
                None,
                host=m.before_all.on,
            )
            self._experiment_held, self._held = self._held, []
            if not step.ok:
                self.store.set_status(self.eid, "interrupted")
                raise PerflabError(
                    f"before_all failed, no run started: {step.failure()}",
                    hint=f"fix it, then `perflab run --resume {self.eid}`",
                )
        self.start_services("experiment", self._experiment_values(), scratch, self._services)
        status, message = self._execute_plan(scratch, pending, done, total)
        if m.after_all:
            step = self.step(
                "after_all",
                render_shell(m.after_all.command, self._experiment_values()),
                self.step_env(None, None),
                scratch,
                None,
                stoppable=False,
                host=m.after_all.on,
            )
            if not step.ok:
                self.observer.message(f"after_all failed: {step.failure()}")
        if status == "complete" and self.store.runs(self.eid, ["pending", "running"]):
            status = "interrupted"
        self.store.set_status(self.eid, status)
        counts: dict[str, int] = {}
        for r in self.store.runs(self.eid):
            counts[r.status] = counts.get(r.status, 0) + 1
        summary = ExperimentOutcome(self.eid, status, counts, message)
        self.observer.finished(summary)
        return summary

    def _execute_plan(
        self, scratch: Path, pending: list[RunRow], done: int, total: int
    ) -> tuple[str, str | None]:
        """Run the pending runs; with adaptive repetitions, then decide after each block
        whether to add one more. Returns (status, message)."""
        m = self.spec.model
        while True:
            for i, run in enumerate(pending):
                if self.stop.is_set():
                    return "interrupted", None
                self.observer.run_started(run, done + i + 1, total)
                self._variant_services(run, scratch)
                outcome = RunExecution(self, run, scratch).execute()
                self.observer.run_finished(run, outcome, done + i + 1, total)
                if outcome.status == "interrupted":
                    return "interrupted", None
                if outcome.status != "ok" and m.on_failure == "abort":
                    return "aborted", (
                        f"stopped: run {run.order_index + 1} {outcome.status}: "
                        f'{outcome.reason} (on_failure = "abort")'
                    )
                stop_reason = self.policy.observe(run.variant, outcome.failure)
                if stop_reason:
                    return "aborted", f"stopped after {self.policy.finished} runs: {stop_reason}"
            if m.adaptive is None or self.stop.is_set():
                return ("interrupted" if self.stop.is_set() else "complete"), None
            from perflab.run.adaptive import next_block

            step = next_block(self.store, self.eid, self.spec)
            if not step.runs:
                return "complete", step.message
            self.observer.message(step.message)
            done, total = total, total + step.runs
            self.observer.replanned(total, step.projected_total)
            pending = self.store.runs(self.eid, ["pending"])

    def _recover_crashed_runs(self) -> None:
        """Runs left 'running' by a killed runner: kill what they left behind, redo them."""
        for r in self.store.runs(self.eid, ["running"]):
            if r.pid and kill_leftover_group(r.pid, r.pid_start):
                self.observer.message(f"killed process group {r.pid} left by an interrupted runner")
            self.store.reset_run(r.id)

    def _pick_cores(self) -> None:
        """Pick every core count the phases can ask for, once, before any run (fail early)."""
        counts: set[int] = set()
        for p in self.spec.model.phase:
            if isinstance(p.cores, int):
                counts.add(p.cores)
            elif isinstance(p.cores, str):
                for cell in self.cells.values():
                    for v in self.variants.values():
                        counts.add(
                            self._core_count(
                                render_value(
                                    p.cores, {**self.spec.model.params, **cell.values, **v.params}
                                )
                            )
                        )
        for n in sorted(counts):
            try:
                self.core_choices[n] = self.executor.pick_cores(n)
            except PerflabError as e:
                self.store.set_status(self.eid, "interrupted")
                raise PerflabError(f"cores = {n}: {e.message}", hint=e.hint) from None

    @staticmethod
    def _core_count(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise PerflabError(f"cores = {value!r}: needs a whole number of cores ≥ 1")
        return value

    def phase_cpus(
        self, phase: PhaseSpec | None, values: dict[str, Any] | None = None
    ) -> tuple[int, ...] | None:
        """The CPUs picked for the phase's ``cores`` (None: the phase is not pinned)."""
        if phase is None or not phase.cores:
            return None
        n = (
            phase.cores
            if isinstance(phase.cores, int)
            else self._core_count(render_value(phase.cores, values or {}))
        )
        return tuple(self.core_choices[n].cpus)

    def _capture_environment(self) -> None:
        """The environment of every host the experiment uses, once (stored by host name)."""
        from perflab.run.environment import capture
        from perflab.run.tool_versions import command_tools

        m = self.spec.model
        stored = self.store.environments(self.eid)
        for name, commands in self._commands_by_host().items():
            executor = self.hosts[name]
            if executor.host in stored:
                continue
            tools = list(dict.fromkeys([*m.tools, *command_tools(commands)]))
            env = capture(executor.host_access(), tools=tools)
            info = dict(env.info)
            if self.core_choices and executor is self.executor:
                info["picked_cores"] = {str(n): c.to_json() for n, c in self.core_choices.items()}
            self.store.put_environment(self.eid, executor.host, info, env.artifacts)

    def _commands_by_host(self) -> dict[str | None, list[str]]:
        """Each host's commands (None: this machine, always there)."""
        m = self.spec.model
        out: dict[str | None, list[str]] = {None: []}
        hooks = (m.before_all, m.after_all, m.before_each, m.after_each)
        placed = [(h.on, h.command) for h in hooks if h]
        placed += [(v.on, c) for v in m.variant for c in (v.setup, v.teardown) if c]
        placed += [(p.on, p.command) for p in m.phase if p.command]
        for on, command in placed:
            out.setdefault(None if on == "local" else on, []).append(command)
        return out

    def _experiment_values(self) -> dict[str, Any]:
        return {**self.spec.model.params, "experiment": self.eid}

    def run_values(self, run: RunRow, run_dir: Path) -> dict[str, Any]:
        """The values a run's command templates are rendered with."""
        m = self.spec.model
        cell = self.cells.get(run.cell_key)
        if cell is None:
            raise PerflabError(
                f"run {run.order_index} is for cell '{run.cell_key}', which the spec no longer has"
            )
        variant = self.variants[run.variant]
        return {
            **m.params,
            **cell.values,
            **variant.params,
            "variant": run.variant,
            "repetition": run.repetition,
            "run": run.order_index + 1,
            "cell": run.cell_key,
            "experiment": self.eid,
            "run_dir": str(run_dir),
            "block": run.block,
            "cores_list": "",
            "seed": (m.seed * 1_000_003 + run.order_index) % (2**31),
            **self.ports,  # services' {NAME_port}
        }

    def step_env(
        self, run: RunRow | None, values: dict[str, Any] | None, phase: PhaseSpec | None = None
    ) -> dict[str, str]:
        """A step's environment: the spec's, the variant's and phase's, PERFLAB_* variables."""
        m = self.spec.model
        env = dict(os.environ)
        env.update(m.env)
        env["PERFLAB_EXPERIMENT"] = str(self.eid)
        if run is not None and values is not None:
            env.update(self.variants[run.variant].env)
            env.update(
                {
                    "PERFLAB_VARIANT": run.variant,
                    "PERFLAB_CELL": run.cell_key,
                    "PERFLAB_REPETITION": str(run.repetition),
                    "PERFLAB_RUN": str(run.order_index + 1),
                    "PERFLAB_RUN_DIR": values["run_dir"],
                    "PERFLAB_WARMUP": "1" if run.warmup else "0",
                }
            )
        if phase is not None:
            env.update(phase.env)
            cpus = self.phase_cpus(phase, values)
            if cpus:
                env["PERFLAB_CORES"] = ",".join(map(str, cpus))
        return env

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
    ) -> StepOutput:
        """Run one command of the experiment on ``host`` (None: this machine); processes
        it leaves running are held until their scope ends (``_held``)."""
        executor = self.hosts[host]
        if executor is not self.executor:  # a host keeps its own environment: send what we add
            env = {k: v for k, v in env.items() if os.environ.get(k) != v}

        def on_start(pid: int) -> None:
            # A local pid, for crash recovery; a remote step's shim ends with its connection.
            if run is not None and executor is self.executor:
                self.store.set_run_process(run.id, pid, process_start_time(pid))

        step = run_command(
            executor,
            name,
            command,
            shell=shell,
            env=env,
            cwd=self.spec.workdir,
            run_dir=run_dir,
            timeout=timeout,
            stop=self.stop if stoppable else None,
            on_start=on_start,
            cpus=cpus,
            kill_grace=self.spec.model.kill_grace,
        )
        if step.process is not None and step.process.lingering is not None:
            self._held.append(step.process.lingering)
        return step

    # -- services
    def start_services(
        self,
        scope: str,
        values: dict[str, Any],
        run_dir: Path,
        into: dict[str, ServiceRun],
        env: dict[str, str] | None = None,
    ) -> None:
        """Starts the services of ``scope`` (ports first, so that each may name the others'),
        adding them to ``into``; ServiceError if one fails (the caller stops ``into``).
        env: the scope's environment (default: the experiment's)."""
        specs = [s for s in self.spec.model.service if s.scope == scope]
        for s in specs:
            if s.port is not None:
                self.ports[f"{s.name}_port"] = free_port() if s.port == FREE_PORT else s.port
        values = {**values, **self.ports}
        for s in specs:
            own = {**values, "port": self.ports.get(f"{s.name}_port", "")}
            service = ServiceRun(
                s.name,
                render_shell(s.command, own),
                self.executor,
                run_dir,
                {**(env if env is not None else self.step_env(None, None)), **s.env},
                s.shell,
                self.spec.model.kill_grace,
            )
            into[s.name] = service
            ready = None
            if s.ready and s.ready.startswith("cmd:"):
                ready = "cmd:" + render_shell(s.ready[4:], own)
            elif s.ready:
                ready = str(render_value(s.ready, own))
            service.start(ready, s.ready_timeout, check=self._ready_check(service, run_dir))

    def _ready_check(self, service: ServiceRun, run_dir: Path) -> Callable[[str], bool]:
        def check(command: str) -> bool:
            return self.step(f"ready:{service.name}", command, service.env, run_dir, 10.0).ok

        return check

    @staticmethod
    def stop_services(services: dict[str, ServiceRun]) -> dict[str, bytes]:
        """Stops them (last started first); returns their output as run artifacts."""
        artifacts: dict[str, bytes] = {}
        for name in reversed(list(services)):
            out = services.pop(name).stop()
            if out is not None:
                for stream, data in (("stdout", out.stdout), ("stderr", out.stderr)):
                    if data:
                        artifacts[f"{stream}:{out.name}"] = data
        return artifacts

    def _variant_services(self, run: RunRow, scratch: Path) -> None:
        """Variant-scope services follow the runs: restarted when the variant changes."""
        if not any(s.scope == "variant" for s in self.spec.model.service):
            return
        if self._service_variant == run.variant:
            return
        self.stop_services({k: v for k, v in self._services.items() if self._is_variant(k)})
        for name in [k for k in self._services if self._is_variant(k)]:
            del self._services[name]
        self._service_variant = run.variant
        values = {**self._experiment_values(), **self.variants[run.variant].params}
        values["variant"] = run.variant
        env = {**self.step_env(None, None), **self.variants[run.variant].env}
        env["PERFLAB_VARIANT"] = run.variant
        self.start_services("variant", values, scratch, self._services, env)

    def _is_variant(self, name: str) -> bool:
        return any(s.name == name and s.scope == "variant" for s in self.spec.model.service)

    def ensure_kernel(self, run: RunRow) -> tuple[str | None, str | None]:
        """Boots the variant's host into its kernel when it runs another (or before every
        run with ``reboot = "each-run"``) and verifies it. Returns (why the run cannot go
        on, or None; ``host<TAB>kernel<TAB>boot id<TAB>cmdline`` for the run's record)."""
        from perflab.run.boot import DEFAULT_BOOT, boot, kernel_state, mismatch

        variant = self.variants[run.variant]
        name = variant.on
        if name in (None, "local"):
            return None, None
        host = self.spec.model.hosts[name]
        if not (variant.kernel or variant.cmdline or host.reboot == "each-run"):
            return None, None
        conn = self.hosts.remote_executor(name).conn
        try:
            state = kernel_state(conn)
            why = mismatch(state, variant.kernel, variant.cmdline)
            if why or host.reboot == "each-run":
                template = variant.boot or host.boot or DEFAULT_BOOT
                command = template.replace("{kernel}", shlex.quote(variant.kernel or ""))
                state = boot(conn, command, host.boot_timeout)
                self.observer.message(
                    f"host '{name}' booted ({command}): {state.kernel}, for variant {variant.name}"
                )
                why = mismatch(state, variant.kernel, variant.cmdline)
                if why:
                    why = f"host '{name}' {why} after `{command}`"
        except HostError as e:
            return e.one_line(), None
        record = f"{name}\t{state.kernel}\t{state.boot_id}\t{state.cmdline}"
        return why, record

    def stop_run_leftovers(self, run: RunRow) -> list[str]:
        """Stop what the run's steps left running; say so the first time a run leaves any."""
        left = stop_all(self._held)
        if left and not self._told_leftovers:
            self._told_leftovers = True
            self.observer.message(
                f"run {run.order_index + 1} left {len(left)} process(es) running "
                f"({left[0].split(' ', 1)[-1][:40]}); stopped at the run's end, as every run's "
                f"will be (`perflab show {self.eid} --run {run.order_index + 1}`)"
            )
        return left

    # -- signals
    def _install_signals(self) -> dict[signal.Signals, SignalHandler] | None:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return None

        def handler(signum: int, frame: FrameType | None) -> None:
            if self.stop.is_set() and signum == signal.SIGINT:
                raise KeyboardInterrupt  # second Ctrl-C: stop waiting for cleanup
            self.stop.set()
            self.observer.message(
                "stopping: the run in flight is cancelled and will be redone on resume"
            )

        return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def _restore_signals(self, previous: dict[signal.Signals, SignalHandler] | None) -> None:
        if previous:
            for s, h in previous.items():
                signal.signal(s, h)
