"""Rules for what is watched while phases run: a phase's perf ``counters``, ``monitor``
tables, and the metrics taken from them (``counter = …``, ``monitor = …``), each checked
when the spec loads so that a misspelt name fails at its line, not every run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.observe.counters import DERIVED, counter_names, event_problem
from perflab.observe.monitor_summary import name_problem
from perflab.observe.monitors import MIN_INTERVAL
from perflab.spec.name_rules import choices_hint
from perflab.spec.phase_kinds import kind_of

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath
    from perflab.spec.schema import MonitorSpec


def check_observe(spec: Spec) -> None:
    m = spec.model
    if m.monitor is not None:
        _check_monitor(spec, ("monitor",), m.monitor)
    for i, phase in enumerate(m.phase):
        if phase.monitor is not None:
            _check_monitor(spec, ("phase", i, "monitor"), phase.monitor)
        if phase.profile_on is not None:
            _check_profile_on(spec, i)
        if phase.counters_on is not None:
            _check_device_counters(spec, i)
            continue
        if not phase.counters:
            continue
        loc = ("phase", i, "counters")
        kind = kind_of(phase)
        if not kind.runs_command:
            raise spec.error(
                loc,
                f"counters are counted around a command; '{phase.name}' is a {kind.key} phase",
                hint="count them in a command phase, or watch the system with a monitor",
            )
        seen: set[str] = set()
        for event in phase.counters:
            problem = event_problem(event)
            if problem:
                raise spec.error(loc, f"phase '{phase.name}': counter {problem}")
            if event in seen:
                raise spec.error(loc, f"phase '{phase.name}' counts '{event}' twice")
            seen.add(event)
    for i, x in enumerate(m.metric):
        if x.counter is not None or x.monitor is not None:
            _check_metric(spec, i)


def _check_profile_on(spec: Spec, i: int) -> None:
    """A phase profiled on a host: a host of the spec, recorded whole (perf -a)."""
    phase = spec.model.phase[i]
    host = str(phase.profile_on)
    hosts = spec.model.hosts
    if host not in hosts and host != "local":
        raise spec.error(
            ("phase", i, "profile_on"),
            f"phase '{phase.name}': profiled on unknown host '{host}'",
            hint=choices_hint(host, list(hosts)),
        )
    if phase.profile is False or phase.profile == "process":
        written = "false" if phase.profile is False else '"process"'
        raise spec.error(
            ("phase", i, "profile"),
            f"phase '{phase.name}': profile_on records host '{host}' whole, "
            f"not profile = {written}",
            hint='write profile = "system" (or true), or remove profile_on',
        )


def _check_device_counters(spec: Spec, i: int) -> None:
    """A phase counted by a device's control: the host has a ``counters`` command, and the
    phase names what it counts (events of that command's output, any name without spaces)."""
    phase = spec.model.phase[i]
    host = phase.counters_on
    hosts = spec.model.hosts
    loc = ("phase", i, "counters_on")
    if host not in hosts:
        raise spec.error(
            loc,
            f"phase '{phase.name}': counters on unknown host '{host}'",
            hint=choices_hint(str(host), list(hosts)),
        )
    control = hosts[str(host)].control
    if control is None or control.counters is None:
        raise spec.error(
            loc,
            f"phase '{phase.name}': host '{host}' has no counters command",
            hint=f'add counters = "…" to [hosts.{host}.control]: a command printing '
            "'EVENT COUNT' lines",
        )
    if not phase.counters:
        raise spec.error(
            loc,
            f"phase '{phase.name}' names no counters for host '{host}'",
            hint='add counters = ["instructions"] (what the command prints)',
        )
    if len(set(phase.counters)) != len(phase.counters):
        raise spec.error(("phase", i, "counters"), f"phase '{phase.name}' counts an event twice")
    for event in phase.counters:
        if not event or any(c.isspace() for c in event):
            raise spec.error(
                ("phase", i, "counters"), f"phase '{phase.name}': counter '{event}' has a space"
            )


def _check_monitor(spec: Spec, loc: KeyPath, monitor: MonitorSpec) -> None:
    if monitor.interval < MIN_INTERVAL:
        raise spec.error(
            loc + ("interval",),
            f"a monitor interval of {monitor.interval * 1000:g} ms is too short",
            hint=f'use {MIN_INTERVAL * 1000:g} ms or more, e.g. interval = "200ms"',
        )
    hosts = ["local", *spec.model.hosts]
    if monitor.on is not None and monitor.on not in hosts:
        raise spec.error(
            loc + ("on",),
            f"monitor on unknown host '{monitor.on}'",
            hint=choices_hint(monitor.on, hosts),
        )
    if len(set(monitor.sources)) != len(monitor.sources):
        raise spec.error(loc + ("sources",), "a monitor source is listed twice")


def _check_metric(spec: Spec, i: int) -> None:
    m = spec.model
    x = m.metric[i]
    phase = next(p for p in m.phase if p.name == m.metric_phase(x))
    key = "counter" if x.counter is not None else "monitor"
    loc = ("metric", i, key)
    if x.overhead is not None:
        raise spec.error(
            ("metric", i, "overhead"),
            f"metric '{x.name}': an overhead command is not {key}ed",
            hint="measure the overhead in a phase of its own (overhead_phase = …)",
        )
    others = [phase] + [p for p in m.phase if p.name == x.overhead_phase]
    if x.counter is not None:
        for p in others:
            names = counter_names(list(p.counters))
            if x.counter in names:
                continue
            if x.counter in DERIVED and p.counters:
                need = " and ".join(DERIVED[x.counter])
                raise spec.error(
                    loc,
                    f"metric '{x.name}': '{x.counter}' needs {need} in the counters of "
                    f"phase '{p.name}'",
                )
            raise spec.error(
                loc,
                f"metric '{x.name}': phase '{p.name}' does not count '{x.counter}'",
                hint=choices_hint(x.counter, sorted(names))
                if names
                else f"add counters = [\"{x.counter}\"] to phase '{p.name}'",
            )
        return
    assert x.monitor is not None
    for p in others:
        monitor = m.phase_monitor(p)
        problem = name_problem(x.monitor, None if monitor is None else list(monitor.sources))
        if problem:
            hint = (
                'add monitor = { interval = "1s" } at the top level or to the phase'
                if monitor is None
                else None
            )
            raise spec.error(loc, f"metric '{x.name}' (phase '{p.name}'): {problem}", hint=hint)
