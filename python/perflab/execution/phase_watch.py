"""What is watched while one phase of a run runs: perf counters around its command and
/proc monitors sampled beside it (`perflab.observe`), on the host where it runs, through
the same `Host` as its command.

`RunExecution` enters a `PhaseWatch` around every phase: a monitor starts before the phase
and stops after it (the series kept as the artifact ``monitor:PHASE``, its summaries added
to the phase's output); `command` puts ``perf stat`` around a command phase's command,
after checking once per host and event list that every event can be counted (a one-line
failure naming the event otherwise); at the end the counts are read (artifact
``counters:PHASE``) and added to the phase's output. A phase with ``counters_on`` is
counted by that device's control instead (`PoweredHost.read_counters`, before and after
the phase: the difference is its count).
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.execution.failure_policy import Failure
from perflab.hosts.powered import CounterReading, PoweredHost
from perflab.hosts.ssh import HostError
from perflab.hosts.step import StepRequest
from perflab.observe.counters import (
    PMU_DEVICES,
    CounterError,
    missing_pmu_reason,
    parse_perf_stat,
    perf_failure,
    perf_stat_command,
    pmu_reason,
)
from perflab.observe.monitor_summary import summarize
from perflab.observe.monitors import LocalSampler, MonitorSeries, parse_loop_output, shell_loop
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from perflab.execution.metrics import PhaseOutput
    from perflab.hosts.base import Host
    from perflab.spec.schema import ExperimentSpec, MonitorSpec, PhaseSpec

#: (host, events) → None when they can be counted there, else why not (checked once).
_CHECKED: dict[tuple[str, tuple[str, ...]], str | None] = {}
_COUNTS_LIMIT = 1 << 20


class WatchedRun(Protocol):
    """What a watch needs of the run it watches (`perflab.execution.run_execution.RunExecution`)."""

    runner: Any  # its `RunContext`: hosts, spec, stop, step_env
    model: ExperimentSpec
    run_dir: Path
    artifacts: dict[str, bytes]
    outputs: dict[str, PhaseOutput]
    failure: tuple[str, Failure] | None
    watch: PhaseWatch | None


class PhaseWatch:
    def __init__(self, ex: WatchedRun, phase: PhaseSpec | None) -> None:
        self.ex, self.phase = ex, phase
        self.monitor: MonitorSpec | None = None
        if phase is not None:
            self.monitor = ex.model.phase_monitor(phase)
        self.local: LocalSampler | None = None
        self.remote: RemoteSampler | None = None
        self.counts_path: str | None = None
        self.device_before: CounterReading | None = None

    def __enter__(self) -> PhaseWatch:
        self.ex.watch = self
        mon, phase = self.monitor, self.phase
        if phase is not None and phase.counters_on is not None:
            self.device_before = self._read_device(phase.counters_on)
            if self.device_before is None:
                return self
        if mon is not None and phase is not None:
            host = mon.on or phase.host
            executor = self.ex.runner.hosts[host]
            if executor is self.ex.runner.hosts.local:
                self.local = LocalSampler(list(mon.sources), mon.interval).start()
            else:
                self.remote = RemoteSampler(executor, mon, self.ex.run_dir, phase.name).start()
        return self

    def command(self, text: str) -> str | None:
        """The phase's command with ``perf stat`` around it when it counts events; None
        when they cannot be counted (the run's failure is set, naming the event)."""
        phase = self.phase
        if phase is None or not phase.counters or phase.counters_on is not None:
            return text
        executor = self.ex.runner.hosts[phase.host]
        events = list(phase.counters)
        key = (executor.name, tuple(events))
        if key not in _CHECKED:
            env = self.ex.runner.hosts.env_for(phase.host, self.ex.runner.step_env(None, None))
            _CHECKED[key] = self._check(executor, events, env)
        if _CHECKED[key] is not None:
            self._fail(f"{_CHECKED[key]}")
            return None
        if executor is self.ex.runner.hosts.local:
            self.counts_path = str(self.ex.run_dir / f"counters-{phase.name}.csv")
        else:
            self.counts_path = f"/tmp/perflab-counters-{secrets.token_hex(8)}.csv"
        return perf_stat_command(text, phase.shell, events, self.counts_path)

    def _check(self, executor: Host, events: list[str], env: dict[str, str]) -> str | None:
        """Why ``events`` cannot be counted on ``executor``'s host (None: they can); on a
        remote host the line names it, and what it lacks is read there."""
        command = perf_stat_command("true", False, events, "/dev/stdout")
        out, err = self.ex.run_dir / "perf-check.out", self.ex.run_dir / "perf-check.err"
        local = executor is self.ex.runner.hosts.local
        where = "here" if local else f"on host {executor.name}"
        # its environment: a host's own (its PATH's perf), not this machine's
        workdir, stop = self.ex.runner.spec.workdir, self.ex.runner.stop
        try:
            result = executor.run(
                StepRequest(command, workdir, out, err, env, timeout=60.0, stop=stop)
            )
        except (OSError, ValueError, HostError) as e:
            return f"perf stat could not run {where}: {e}"
        if not result.ok:
            paranoid = None if local else _host_paranoid(executor)
            return perf_failure(_text(err) or _text(out), paranoid, where)
        why = missing_pmu_reason if local else _host_pmu_reason(executor)
        try:
            parse_perf_stat(_text(out), events, why, where)
        except CounterError as e:
            return str(e)
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.ex.watch = None
        phase = self.phase
        if phase is None:
            return
        series = None
        if self.local is not None:
            series = self.local.stop()
        elif self.remote is not None:
            series = self.remote.stop()
        if kind is not None or self.ex.failure is not None:
            self._discard_counts(phase)  # not read: a host's CSV removed all the same
        if kind is not None:
            return
        monitor: dict[str, float] = {}
        counters: dict[str, float] = {}
        if series is not None:
            self.ex.artifacts[keys.monitor(phase.name)] = series.to_bytes()
            monitor = summarize(series)
            for gap in series.missing:  # what the host lacks: said once, left out
                where = f"on host {series.host}" if series.host else "here"
                self.ex.runner.say_once(f"monitor {where}: {gap}; left out of the series")
        if self.counts_path is not None and self.ex.failure is None:
            counters = self._read_counts(phase) or {}
        if self.device_before is not None and self.ex.failure is None:
            counters = self._device_counts(phase, self.device_before) or {}
        out = self.ex.outputs.get(phase.name)
        if out is not None and (monitor or counters):
            self.ex.outputs[phase.name] = dataclasses.replace(
                out, counters=counters, monitor=monitor
            )

    def _read_counts(self, phase: PhaseSpec) -> dict[str, float] | None:
        assert self.counts_path is not None
        executor = self.ex.runner.hosts[phase.host]
        try:
            data = executor.fetch(self.counts_path, self.ex.runner.spec.workdir, _COUNTS_LIMIT)
        except (FileNotFoundError, HostError) as e:
            self._fail(f"perf stat wrote no counts ({e})")
            return None
        finally:
            if executor is not self.ex.runner.hosts.local:
                _quiet(executor, f"rm -f {self.counts_path}", self.ex.run_dir)
        self.ex.artifacts[keys.counters(phase.name)] = data
        try:
            return parse_perf_stat(data.decode("utf-8", "replace"), list(phase.counters)).values
        except CounterError as e:
            self._fail(str(e))
            return None

    def _read_device(self, host: str) -> CounterReading | None:
        """The counts of device ``host``'s control now (None: the run fails, saying why)."""
        device = self.ex.runner.hosts[host]
        if not isinstance(device, PoweredHost):  # a labgrid place's power has no counters
            self._fail(f"host '{host}' is not booted from here: it has no counters command")
            return None
        try:
            return device.read_counters(self.ex.run_dir)
        except HostError as e:
            self._fail(e.one_line())
            return None

    def _device_counts(self, phase: PhaseSpec, before: CounterReading) -> dict[str, float] | None:
        """Each of the phase's events counted by its device over the phase: after − before
        (artifact ``counters:PHASE``, both readings); None when one is missing."""
        assert phase.counters_on is not None
        after = self._read_device(phase.counters_on)
        if after is None:
            return None
        self.ex.artifacts[keys.counters(phase.name)] = (
            b"# before\n" + before.text + b"# after\n" + after.text
        )
        counts: dict[str, float] = {}
        for event in phase.counters:
            if event not in before.counts or event not in after.counts:
                printed = ", ".join(sorted(after.counts)) or "nothing"
                self._fail(
                    f"host '{phase.counters_on}' counters printed no '{event}' (printed: {printed})"
                )
                return None
            counts[event] = after.counts[event] - before.counts[event]
        return counts

    def _discard_counts(self, phase: PhaseSpec) -> None:
        """Removes the counts file perf stat wrote on a remote host (a local one goes with
        the run's directory)."""
        executor = self.ex.runner.hosts[phase.host]
        if self.counts_path is not None and executor is not self.ex.runner.hosts.local:
            _quiet(executor, f"rm -f {self.counts_path}", self.ex.run_dir)

    def _fail(self, why: str) -> None:
        """The run fails at this phase, because of its counters."""
        step = f"phase:{self.phase.name}" if self.phase is not None else "phase"
        if self.ex.failure is None:
            self.ex.failure = ("failed", Failure(step, "counters", f"{step}: {why}"))


class RemoteSampler:
    """A monitor on another host: `shell_loop` run there as a step beside the phase, stopped
    (its process tree ended) when the phase ends; its output gives the series."""

    def __init__(self, executor: Host, mon: MonitorSpec, run_dir: Path, phase: str) -> None:
        self.executor, self.mon = executor, mon
        self.out = run_dir / f"monitor-{phase}.out"
        self.err = run_dir / f"monitor-{phase}.err"
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="perflab-monitor", daemon=True)
        self.error: str | None = None

    def start(self) -> RemoteSampler:
        self.thread.start()
        return self

    def _run(self) -> None:
        loop = shell_loop(list(self.mon.sources), self.mon.interval)
        request = StepRequest(
            loop, Path("/"), self.out, self.err, stop=self.stop_event, kill_grace=0.5
        )
        try:
            self.executor.run(request)
        except (OSError, ValueError, HostError) as e:
            self.error = str(e)

    def stop(self) -> MonitorSeries:
        self.stop_event.set()
        self.thread.join()
        series = parse_loop_output(_text(self.out), list(self.mon.sources), self.mon.interval)
        series.host = self.executor.name
        if self.error:
            series.missing.append(f"sampler: {self.error}")
        return series


def _text(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""


def _host_paranoid(executor: Host) -> str:
    """kernel.perf_event_paranoid on ``executor``'s host ("" when it cannot be read)."""
    data = executor.read_file("/proc/sys/kernel/perf_event_paranoid")
    return "" if data is None else data.decode("utf-8", "replace").strip()


def _host_pmu_reason(executor: Host) -> Callable[[str], str]:
    """`missing_pmu_reason` for ``executor``'s host: its event sources listed there."""

    def why(event: str) -> str:
        done = executor.query(["ls", PMU_DEVICES], 30.0)
        pmus = done.output.split() if done is not None and done.status == 0 else []
        return pmu_reason(event, pmus, "there")

    return why


def _quiet(executor: Host, command: str, run_dir: Path) -> None:
    """A clean-up command whose failure does not matter."""
    try:
        executor.run(
            StepRequest(
                command, Path("/"), run_dir / "cleanup.out", run_dir / "cleanup.err", timeout=30.0
            )
        )
    except (OSError, ValueError, HostError):
        pass
