"""The runner loop: executes an experiment's pending runs in order, one committed at a time.

Per run (run_execution.py): before_each → variant setup → phases (in the order written) →
variant teardown → after_each. A failing or timed-out step marks the run failed (cleanup
steps still run); the experiment then goes on or stops as ``on_failure`` says.
SIGINT/SIGTERM stop the command in flight, put that run back to pending, and leave the
experiment resumable (stop_signals.py). An error that stops the experiment outside a run
(a host unreachable, before_all failing, an experiment-scope service not ready) leaves it
``stopped``, the reason kept with it (`Database.stop_experiment`), resumable; never
``running``. Around the runs: services (service_scopes.py: a variant-scope one that
cannot start fails its variant's runs), pinned phases' cores (phase_cores.py), each
host's environment (host_environments.py), variants' kernels (variant_kernel.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import PerflabError, StoreError
from perflab.execution.command import StepOutput, run_command
from perflab.execution.experiment_hosts import Hosts
from perflab.execution.failure_policy import Failure, FailurePolicy
from perflab.execution.host_environments import capture_environments
from perflab.execution.observer import ExperimentOutcome, Observer, SayOnce, SilentObserver
from perflab.execution.phase_cores import core_counts, phase_cpus
from perflab.execution.run_execution import RunExecution, RunOutcome
from perflab.execution.scratch import make_scratch, remove_stale_scratch, stop_all
from perflab.execution.service_scopes import ServiceScopes, VariantServicesFailed, stop_services
from perflab.execution.stop_signals import install_stop_signals, restore_signals
from perflab.execution.system_snapshots import EverySnapshot
from perflab.execution.variant_build import VariantBuilds
from perflab.execution.variant_kernel import Readiness, ensure_kernel
from perflab.hosts.base import Host
from perflab.hosts.local import LocalHost
from perflab.hosts.process import HeldProcesses, kill_leftover_group, process_start_time
from perflab.hosts.ssh import HostError
from perflab.hosts.step import StepRequest, output_files
from perflab.platform import pick_cores, read_topology
from perflab.spec import Spec
from perflab.spec.matrix import Cell, expand_matrix
from perflab.spec.template import render_shell
from perflab.store import Database, RunRow

if TYPE_CHECKING:
    from collections.abc import Callable

    from perflab.execution.adaptive import Decided
    from perflab.platform import CoreChoice
    from perflab.spec.schema import PhaseSpec

__all__ = ["ExperimentOutcome", "Observer", "Runner", "SilentObserver"]


class Runner:
    def __init__(
        self,
        store: Database,
        spec: Spec,
        experiment_id: int,
        *,
        executor: Host | None = None,
        observer: Observer | None = None,
        handle_signals: bool = True,
        max_failures: int | None = None,
        profile: bool | str = False,
        decided: Decided | None = None,
    ):
        from perflab.observe.profile import Profiles

        self.store = store
        self.spec = spec
        self.eid = experiment_id
        self.executor: Host = executor or LocalHost()
        # The experiment's machines: this one and every [hosts.NAME] (connected in run());
        # a pool's host is its first device here, the others' workers make their own.
        self.hosts = Hosts(
            self.executor,
            spec.model.hosts,
            workdir=spec.workdir,
            values=dict(spec.model.params),
            kill_grace=spec.model.kill_grace,
        )
        #: The host that is a pool of devices (pool = N, or a pool of labgrid places): its
        #: name; its devices are known once its places are acquired (execution/pool.py).
        self.pool = next((n for n, h in spec.model.hosts.items() if h.pooled), None)
        self.device: str | None = None  # a pool's device this runner's runs run on
        self.observer = observer or SilentObserver()
        self.say_once: Callable[[str], None] = SayOnce(self.observer.message)  # said once
        # perf profiles of the phases: the spec's `profile`, or every measured phase (--profile)
        self.profiles = Profiles(spec.model, profile, self.say_once)
        self.handle_signals = handle_signals
        # ends adaptive repetitions as soon as it answers (a bisect step's decision)
        self.decided = decided
        self.stop = threading.Event()
        self.hosts.stop = self.stop  # a boot in progress ends on the stop request
        self.described: set[str] = set()  # booted hosts whose environment was captured
        self.builds = VariantBuilds(spec.model, self)  # the variants' builds, once each
        self.cells: dict[str, Cell] = {c.key: c for c in expand_matrix(spec.model.matrix)}
        self.core_choices: dict[int, CoreChoice] = {}  # N → CoreChoice, picked once per experiment
        self.variants = {v.name: v for v in spec.model.variant}
        # Processes finished steps left running, held until their scope ends: the run's
        # steps' until the run's end, before_all's until the experiment's end.
        self.held: list[HeldProcesses] = []
        self._experiment_held: list[HeldProcesses] = []
        self._told_leftovers = False
        self._ended = False  # how the experiment ended is recorded
        # Services of scope "experiment" and "variant" now running, and their ports.
        self.services = ServiceScopes(self)
        self.ports: dict[str, int] = self.services.ports
        m = spec.model
        self.policy = FailurePolicy(
            m.max_failures if max_failures is None else max_failures, m.max_failure_share
        )

    # -- public
    def run(self) -> ExperimentOutcome:
        holder = self.store.claim(self.eid, os.getpid(), self.executor.name)
        if holder:
            self.hosts.close()  # nothing connected yet: its folder of control sockets goes
            raise PerflabError(
                f"experiment {self.eid} is being run by process {holder.pid} on this host"
            )
        # From here on, whatever ends run() (a scratch folder that cannot be made included)
        # gives the caller back its signal handlers and the experiment's lock.
        previous = None
        scratch: Path | None = None
        try:
            if self.handle_signals:
                previous = install_stop_signals(self.stop, self.observer.message)
            remove_stale_scratch()
            scratch = make_scratch()
            try:  # an unreachable host stops the experiment before any run
                self.hosts.prepare(self.spec.workdir, scratch, self.observer.message)
            except HostError as e:
                raise HostError(e.message, hint=self._unstarted()) from None
            return self._run(scratch)
        except KeyboardInterrupt:  # a second Ctrl-C: resumable, as after the first
            self._ended_early("interrupted", None)
            raise
        except StoreError as e:  # the store went away mid-experiment (a server stopped)
            self._ended_early("stopped", e.one_line())
            if e.hint:
                raise
            raise StoreError(
                e.message,
                hint="once the store can be written again (its server back, its disk with "
                f"room), `perflab run --resume {self.eid}` finishes the experiment (the run "
                "in flight is done again)",
            ) from None
        except PerflabError as e:
            self._ended_early("stopped", e.one_line())
            raise
        except Exception as e:  # a bug: the experiment still says it stopped, and why
            self._ended_early("stopped", f"{type(e).__name__}: {e}")
            raise
        finally:  # whatever ended the experiment, what its steps left running goes now
            try:  # the runner's handlers stay for this (a second Ctrl-C stops waiting for it)
                self.stop_services(self.services.running)
                for held in (self.held, self._experiment_held):
                    stop_all(held)
                self.hosts.close()
            finally:
                restore_signals(previous)
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
                with contextlib.suppress(StoreError):  # a full disk must not hide the first error
                    self.store.release(self.eid)

    def _unstarted(self) -> str:
        """What to do after a failure before any run: resume once the cause is gone (the
        same spec), or run the corrected spec, whose new experiment takes this one's place
        (`perflab.api.running`: an experiment of the same name that never started a run
        is removed when the next one is made)."""
        return (
            f"no run started; once the cause is gone `perflab run --resume {self.eid}`, or "
            "run the corrected spec (it replaces this experiment)"
        )

    def request_stop(self) -> None:
        self.stop.set()

    def _ended_early(self, status: str, reason: str | None) -> None:
        """The experiment ends by an exception: ``stopped`` with ``reason`` (or
        ``interrupted``) unless its end was recorded already; never left ``running``."""
        if self._ended:
            return
        with contextlib.suppress(StoreError):  # a full disk must not hide the first error
            if reason is None:
                self.store.set_status(self.eid, status)
            else:
                self.store.stop_experiment(
                    self.eid, (reason.strip().splitlines() or [""])[0][:1000]
                )

    # -- internals
    def _run(self, scratch: Path) -> ExperimentOutcome:
        self._recover_crashed_runs()
        runs = self.store.runs(self.eid)
        pending = [r for r in runs if r.status == "pending"]
        total, done = len(runs), len(runs) - len(pending)
        self.store.set_status(self.eid, "running")
        self.observer.started(self.eid, total, done, done > 0)
        self._pick_cores()
        capture_environments(
            self.store, self.eid, self.spec.model, self.hosts, self.executor, self.core_choices
        )
        # With a pool, this machine's only: the devices' workers use the hosts meanwhile.
        remote = [] if self.pool else [ex for ex in self.hosts.remote() if ex is not self.executor]
        self.snapshots = EverySnapshot(
            self.store,
            self.eid,
            [self.executor, *remote],
            self.spec.model.order,
            message=self.observer.message,
            every=self.spec.model.snapshot_every,
        )
        self.snapshots.start()
        self._before_all(scratch)
        self.services.start("experiment", self.experiment_values(), scratch, self.services.running)
        status, message = self._execute_plan(scratch, pending, done, total)
        if status != "interrupted":  # (Ctrl-C: out at once, not after a 0.25 s sample)
            self.snapshots.finish()
        self._after_all(scratch)
        if status == "complete" and self.store.runs(self.eid, ["pending", "running"]):
            status = "interrupted"
        self.store.set_status(self.eid, status)
        self._ended = True
        counts: dict[str, int] = {}
        for r in self.store.runs(self.eid):
            counts[r.status] = counts.get(r.status, 0) + 1
        summary = ExperimentOutcome(self.eid, status, counts, message)
        self.observer.finished(summary)
        return summary

    def _before_all(self, scratch: Path) -> None:
        """Runs before_all; what it leaves running is held until the experiment's end."""
        hook = self.spec.model.before_all
        if not hook:
            return
        command = render_shell(hook.command, self.experiment_values())
        step = self.step("before_all", self.request("before_all", command, scratch), host=hook.on)
        self._experiment_held, self.held = self.held, []
        if not step.ok:
            raise PerflabError(
                f"before_all failed, no run started: {step.failure()}",
                hint=f"fix it, then `perflab run --resume {self.eid}`",
            )

    def _after_all(self, scratch: Path) -> None:
        """Runs after_all, even after a stop request; its failure is only reported."""
        hook = self.spec.model.after_all
        if not hook:
            return
        request = self.request(
            "after_all", render_shell(hook.command, self.experiment_values()), scratch
        )
        step = self.step("after_all", dataclasses.replace(request, stop=None), host=hook.on)
        if not step.ok:
            self.observer.message(f"after_all failed: {step.failure()}")

    def _execute_plan(
        self, scratch: Path, pending: list[RunRow], done: int, total: int
    ) -> tuple[str, str | None]:
        """Run the pending runs (a pool's: spread over its devices); with adaptive
        repetitions, then decide after each block whether to add one more. Returns
        (status, message)."""
        m = self.spec.model
        pool = None
        if self.pool is not None:
            from perflab.execution.pool import Pool

            pool = Pool(self, scratch, self.pool, self.hosts.devices(self.pool))
        while True:
            if pool is not None:
                status, message = pool.execute(pending, done, total)
                if status != "complete":
                    return status, message
                pending = []
            for i, run in enumerate(pending):
                if self.stop.is_set():
                    return "interrupted", None
                self.observer.run_started(run, done + i + 1, total)
                # its hosts booted first (a boot would end a variant's service on the device)
                boot = self.ensure_kernel(run, scratch)
                if self.stop.is_set():  # stopped while building or booting: never started
                    return "interrupted", None
                unstarted = None if boot.why else self.services.follow_variant(run, scratch)
                if unstarted is not None:  # its variant's services: the run fails, not all
                    outcome = self.fail_unstarted(run, unstarted)
                else:
                    outcome = RunExecution(self, run, scratch, boot).execute()
                self.observer.run_finished(run, outcome, done + i + 1, total)
                if outcome.status == "interrupted":
                    return "interrupted", None
                self.snapshots.after_run(run, pending[i + 1] if i + 1 < len(pending) else None)
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
            from perflab.execution.adaptive import next_block

            width = pool.size - len(pool.aside) if pool is not None else 1  # one per device
            step = next_block(self.store, self.eid, self.spec, self.decided, width)
            if not step.runs:
                return "complete", step.message
            self.observer.message(step.message)
            done, total = total, total + step.runs
            self.observer.replanned(total, step.projected_total)
            pending = self.store.runs(self.eid, ["pending"])

    def fail_unstarted(self, run: RunRow, why: VariantServicesFailed) -> RunOutcome:
        """Records a run that could not start because its variant's services did not."""
        host = self.executor.name
        self.store.start_run(run.id, host)
        self.store.finish_run(run.id, "failed", why.reason, {}, why.artifacts, self.eid, host)
        return RunOutcome(
            "failed", why.reason, {}, 0.0, Failure("service", "not ready", why.reason)
        )

    def _recover_crashed_runs(self) -> None:
        """Runs left 'running' by a killed runner: kill what they left behind, redo them."""
        for r in self.store.runs(self.eid, ["running"]):
            if r.pid and kill_leftover_group(r.pid, r.pid_start):
                self.observer.message(f"killed process group {r.pid} left by an interrupted runner")
            self.store.reset_run(r.id)

    def _pick_cores(self) -> None:
        """Pick every core count the phases can ask for, once, before any run (fail early)."""

        counts = core_counts(self.spec.model, self.cells.values(), self.variants.values())
        for n in sorted(counts):
            try:
                self.core_choices[n] = pick_cores(n, read_topology())  # this machine's
            except PerflabError as e:
                raise PerflabError(f"cores = {n}: {e.message}", hint=e.hint) from None

    def phase_cpus(
        self, phase: PhaseSpec | None, values: dict[str, Any] | None = None
    ) -> tuple[int, ...] | None:
        """The CPUs picked for the phase's ``cores`` (None: the phase is not pinned)."""
        return phase_cpus(phase, values, self.core_choices)

    def experiment_values(self) -> dict[str, Any]:
        """The values experiment-wide commands (before_all, after_all, services) get."""
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
            **({"slot": self.hosts.slot} if self.pool else {}),  # the run's device in a pool
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

    def request(self, name: str, command: str, folder: Path) -> StepRequest:
        """The step called ``name`` as the experiment runs one unless told otherwise: from
        the spec's workdir, with the experiment's environment, no timeout, stopped by the
        experiment's stop request (and its ``kill_grace``), its output into ``folder``. A
        caller `dataclasses.replace`s what differs (a run's environment, a timeout, ...)."""
        out, err = output_files(folder, name)
        env = self.step_env(None, None)
        grace = self.spec.model.kill_grace
        return StepRequest(
            command, self.spec.workdir, out, err, env, stop=self.stop, kill_grace=grace
        )

    def step(
        self, name: str, request: StepRequest, *, run: RunRow | None = None, host: str | None = None
    ) -> StepOutput:
        """Run one command of the experiment on ``host`` (None: this machine), its
        environment as that host takes it; processes it leaves running are held until their
        scope ends (``held``)."""
        executor = self.hosts[host]

        def on_start(pid: int) -> None:
            # A local pid, for crash recovery; a remote step's shim ends with its connection.
            if run is not None and executor is self.executor:
                self.store.set_run_process(run.id, pid, process_start_time(pid))

        env = self.hosts.env_for(host, request.env)
        request = dataclasses.replace(request, env=env, on_start=on_start)
        step = run_command(executor, name, request)
        if step.process is not None and step.process.lingering is not None:
            self.held.append(step.process.lingering)
        return step

    # -- services, kernels, leftovers (what a run asks of the experiment: `RunContext`)
    stop_services = staticmethod(stop_services)

    def ensure_kernel(self, run: RunRow, scratch: Path) -> Readiness:
        """Builds the run's variant if it has a build and has not been built yet
        (`variant_build`), then boots the run's hosts as it needs (`variant_kernel`); a
        device booted for the first time has its environment captured then."""
        variant = self.variants[run.variant]
        built = self.builds.ensure(variant, scratch)
        if built is not None and built.failure is not None:
            return Readiness(built.failure, None, "build", built.artifacts)
        booted = ensure_kernel(self.hosts, self.spec.model, variant, self.observer.message)
        if built is not None and built.artifacts:
            booted = dataclasses.replace(booted, artifacts={**built.artifacts, **booted.artifacts})
        if self.hosts.booted - self.described:  # a device up for the first time
            capture_environments(
                self.store, self.eid, self.spec.model, self.hosts, self.executor, {}
            )
            self.described |= self.hosts.booted
        return booted

    def stop_run_leftovers(self, run: RunRow) -> list[str]:
        """Stop what the run's steps left running; say so the first time a run leaves any."""
        left = stop_all(self.held)
        if left and not self._told_leftovers:
            self._told_leftovers = True
            self.observer.message(
                f"run {run.order_index + 1} left {len(left)} process(es) running "
                f"({left[0].split(' ', 1)[-1][:40]}); stopped at the run's end, as every run's "
                f"will be (`perflab show {self.eid} --run {run.order_index + 1}`)"
            )
        return left
