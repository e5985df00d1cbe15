"""A pool of devices (``[hosts.NAME] pool = N``, or a pool of labgrid places: ``labgrid =
"router-*"``): an experiment's blocks spread over identical devices, one block whole on
one device, the devices working side by side. The devices start together, once each is
ready or set aside.

Each device has a worker on a thread of its own: a copy of the runner whose machines are
its own (the pool's host is that device, ``{slot}`` filled in), with its own store
connection and its own variant services, taking one block at a time from a queue in the
plan's order. The runner's thread keeps what is the experiment's: the observer, the
failure policy, the system snapshots and adaptive repetitions — each worker hands it
every run it starts and finishes.

A device that fails on its own is set aside with a one-line message and the run goes back
to the queue, for another device: down at a boot, or lost during a run, while the run's
variant has booted (on any device of the pool) before — a variant whose kernel never
booted anywhere is to blame itself, and its run fails as on one device. A run goes back
once; a second device lost on it records it failed. With every device set aside the
experiment stops. Ctrl-C, a failure that stops the experiment and ``--resume`` behave as
with one host: a worker ends its run in flight (an interrupted one goes back to pending)
and takes no other.
"""

from __future__ import annotations

import contextlib
import copy
import queue
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.execution.experiment_hosts import Hosts
from perflab.execution.host_environments import capture_environments
from perflab.execution.run_execution import RunContext, RunExecution, RunOutcome
from perflab.execution.scratch import stop_all
from perflab.execution.service_scopes import ServiceScopes
from perflab.hosts.ssh import HostError
from perflab.store import Database, RunRow

if TYPE_CHECKING:
    from perflab.execution.failure_policy import FailurePolicy
    from perflab.execution.observer import Observer
    from perflab.execution.service_scopes import VariantServicesFailed
    from perflab.execution.system_snapshots import EverySnapshot
    from perflab.execution.variant_kernel import Readiness
    from perflab.hosts.process import HeldProcesses


class Runner(RunContext, Protocol):
    """What the pool takes from the runner (`perflab.execution.runner.Runner`), and what
    a device's worker, a copy of it, has of its own."""

    observer: Observer
    policy: FailurePolicy
    snapshots: EverySnapshot
    device: str | None
    hosts: Hosts
    held: list[HeldProcesses]
    described: set[str]

    def experiment_values(self) -> dict[str, Any]: ...

    def ensure_kernel(self, run: RunRow, scratch: Path) -> Readiness: ...

    def fail_unstarted(self, run: RunRow, why: VariantServicesFailed) -> RunOutcome: ...


@dataclass(frozen=True)
class _Event:
    """What a worker tells the runner's thread: a run ``started`` or ``finished``, a device
    set ``aside`` (``why``), a worker ``done``, or the ``error`` that ended it."""

    kind: str
    slot: int
    run: RunRow | None = None
    outcome: RunOutcome | None = None
    why: str = ""
    error: BaseException | None = None


class Pool:
    """The pool's devices executing a list of pending runs (`execute`)."""

    def __init__(self, runner: Runner, scratch: Path, name: str, devices: list[str]):
        self.runner, self.scratch, self.name = runner, scratch, name
        self.devices = devices  # each slot's name, as its runs record it
        self.size = len(devices)
        self.events: queue.Queue[_Event] = queue.Queue()
        self.halt = threading.Event()  # no new run: the failure policy stopped the experiment
        self.lock = threading.Lock()
        self.booted: set[str] = set()  # variants that booted on a device of the pool
        self.retried: set[int] = set()  # runs that went back to the queue once
        self.aside: dict[int, str] = {}  # slot → why it was set aside

    def execute(self, pending: list[RunRow], done: int, total: int) -> tuple[str, str | None]:
        """Runs ``pending`` on the devices; (status, message) as `Runner._execute_plan`."""
        r = self.runner
        self.blocks: deque[deque[RunRow]] = deque()
        for run in pending:
            if not self.blocks or self.blocks[-1][0].block != run.block:
                self.blocks.append(deque())
            self.blocks[-1].append(run)
        self.again: deque[RunRow] = deque()  # runs a device set aside left: first in line
        slots = [s for s in range(self.size) if s not in self.aside]
        # the devices start together, once each is ready or set aside: a device slower to
        # connect to would otherwise find the first blocks taken
        self.start = threading.Barrier(len(slots))
        workers = [threading.Thread(target=self._work, args=(s,), daemon=True) for s in slots]
        for w in workers:
            w.start()
        status, message, error = self._follow(len(workers), done, total)
        for w in workers:
            w.join()
        if error is not None:
            raise error
        if status is None and r.stop.is_set():
            status = "interrupted"
        if status is None and (self.blocks or self.again):
            status = "aborted"
            message = f"stopped: every device of pool '{self.name}' was set aside"
        return status or "complete", message

    # -- the runner's thread
    def _follow(
        self, alive: int, done: int, total: int
    ) -> tuple[str | None, str | None, BaseException | None]:
        """Passes the workers' runs to the observer and the failure policy until every
        worker is done; the first reason to stop, and the first error of a worker."""
        r, m = self.runner, self.runner.spec.model
        status: str | None = None
        message: str | None = None
        error: BaseException | None = None
        started = finished = 0
        while alive:
            e = self.events.get()
            if e.kind == "done":
                alive -= 1
            elif e.kind == "error":
                error = error or e.error
                self.halt.set()
            elif e.kind == "aside":
                r.observer.message(e.why)
            elif e.kind == "started":
                started += 1
                assert e.run is not None
                r.observer.run_started(e.run, done + finished + 1, total)
            elif e.kind == "finished":
                finished += 1
                assert e.run is not None and e.outcome is not None
                run, outcome = e.run, e.outcome
                r.observer.run_finished(run, outcome, done + finished, total)
                if outcome.status == "interrupted":
                    status = status or "interrupted"
                    continue
                r.snapshots.after_run(run, None)
                if status is not None:
                    continue
                if outcome.status != "ok" and m.on_failure == "abort":
                    status, message = (
                        "aborted",
                        (
                            f"stopped: run {run.order_index + 1} {outcome.status}: "
                            f'{outcome.reason} (on_failure = "abort")'
                        ),
                    )
                elif reason := r.policy.observe(run.variant, outcome.failure):
                    status = "aborted"
                    message = f"stopped after {r.policy.finished} runs: {reason}"
                if status is not None:
                    self.halt.set()
        return status, message, error

    # -- a device's worker
    def _work(self, slot: int) -> None:
        worker: Runner | None = None
        try:
            try:
                worker = self._worker(slot)
            except HostError as e:  # it cannot be reached (or staged): not a device to use
                self._set_aside(slot, None, e.one_line())
                return
            finally:
                with contextlib.suppress(threading.BrokenBarrierError):
                    self.start.wait()
            current: deque[RunRow] = deque()
            while not (self.runner.stop.is_set() or self.halt.is_set()):
                run = self._next(current)
                if run is None:
                    break
                if not self._execute(worker, slot, run):
                    with self.lock:
                        self.again.extend(current)  # the rest of its block, to another device
                    current.clear()
                    break
        except BaseException as e:  # a bug or the store gone: the runner's thread raises it
            self.start.abort()  # (no device waits for this one)
            self.events.put(_Event("error", slot, error=e))
        finally:
            if worker is not None:
                self._close(worker, slot)
            self.events.put(_Event("done", slot))

    def _next(self, current: deque[RunRow]) -> RunRow | None:
        """The next run for a device: one a set-aside device left, else the next of its
        block, else the first of the next block."""
        with self.lock:
            if self.again:
                return self.again.popleft()
            if not current and self.blocks:
                current.extend(self.blocks.popleft())
            return current.popleft() if current else None

    def _execute(self, worker: Runner, slot: int, run: RunRow) -> bool:
        """Runs ``run`` on device ``slot``; False when the device was set aside (the run
        back in the queue)."""
        self.events.put(_Event("started", slot, run))
        boot = worker.ensure_kernel(run, self.scratch)
        if worker.stop.is_set():  # stopped while building or booting: it never started
            return True
        if boot.why and boot.step == "boot" and self._not_the_variants(run):
            return self._set_aside(slot, run, boot.why)
        if not boot.why:
            with self.lock:
                self.booted.add(run.variant)
        unstarted = None if boot.why else worker.services.follow_variant(run, self.scratch)
        if unstarted is not None:
            outcome = worker.fail_unstarted(run, unstarted)
        else:
            outcome = RunExecution(worker, run, self.scratch, boot).execute()
        lost = outcome.status != "ok" and worker.hosts.lost(self.name)
        if lost and outcome.status != "interrupted" and self._not_the_variants(run):
            worker.store.reset_run(run.id)
            return self._set_aside(slot, run, outcome.reason or "lost during the run")
        self.events.put(_Event("finished", slot, run, outcome))
        return True

    def _not_the_variants(self, run: RunRow) -> bool:
        """A device's failure on ``run`` is the device's own: the variant booted on the
        pool before, and the run has not gone back to the queue already."""
        with self.lock:
            return run.variant in self.booted and run.id not in self.retried

    def _set_aside(self, slot: int, run: RunRow | None, why: str) -> bool:
        """Device ``slot`` is used no more (said once); ``run``, which it failed, goes
        first in line for another device."""
        device = self.devices[slot]
        with self.lock:
            if run is not None:
                self.retried.add(run.id)
                self.again.appendleft(run)
            self.aside[slot] = why
            left = self.size - len(self.aside)
        first = (why.strip().splitlines() or ["?"])[0][:200]
        then = (
            f"run {run.order_index + 1} goes to another device" if run else "runs go to the others"
        )
        self.events.put(
            _Event(
                "aside",
                slot,
                run,
                why=f"device {device} set aside: {first}; {then} ({left} of {self.size} left)",
            )
        )
        return False

    def _worker(self, slot: int) -> Runner:
        """A copy of the runner for device ``slot``: its own machines (slot 0: the runner's,
        prepared already), store connection, variant services and held processes."""
        r = self.runner
        if slot == 0 and self.name in r.hosts.unready:  # not reached when the experiment began
            raise r.hosts.unready[self.name]
        worker = copy.copy(r)
        worker.device = self.devices[slot]
        worker.store = Database(r.store.path)
        worker.held = []
        worker.described = set()  # its device's environment: captured at its first boot
        worker.services = ServiceScopes(worker)
        worker.services.ports.update(r.ports)  # the experiment's services' ports
        worker.ports = worker.services.ports
        if slot != 0:
            m = r.spec.model
            worker.hosts = Hosts(
                r.executor,
                m.hosts,
                workdir=r.spec.workdir,
                values=dict(m.params),
                kill_grace=m.kill_grace,
                slot=slot,
                lease=r.hosts.pool_leases[slot] if r.hosts.pool_leases else None,
            )
            worker.hosts.stop = r.stop
            folder = self.scratch / f"device-{slot}"
            folder.mkdir(exist_ok=True)
            try:
                worker.hosts.prepare(r.spec.workdir, folder, r.observer.message)
                if self.name in worker.hosts.unready:
                    raise worker.hosts.unready[self.name]
                # the device's environment, under its name (one booted from here: at its boot)
                capture_environments(worker.store, r.eid, m, worker.hosts, r.executor, {})
            except HostError as e:
                worker.hosts.close()
                worker.store.close()
                raise HostError(e.message, hint=e.hint) from None
        return worker

    def _close(self, worker: Runner, slot: int) -> None:
        """Ends what the device's worker started: its variant services, what its steps
        left running, its machines (slot 0's are the runner's, closed at the end)."""
        try:
            worker.stop_services(worker.services.running)
            stop_all(worker.held)
            if slot != 0:
                worker.hosts.close()
        finally:
            worker.store.close()
