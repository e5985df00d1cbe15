"""perf counters as metrics: ``perf stat -x, -e EVENTS -o FILE -- COMMAND`` around a phase's
command, its CSV read back into one number per event (and IPC when instructions and cycles
are both counted).

An event the machine cannot count is a one-line error naming it and saying why (no
hardware PMU, `perf_event_paranoid`, an unknown event; and where: here or the host's
name), found before the first run that counts it, never a silent zero. Nothing here knows the experiment
file: `perflab.execution.phase_watch` turns a phase's ``counters`` into these calls.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: perf's generic software events (counted by the kernel; work without a hardware PMU).
SOFTWARE_EVENTS = frozenset(
    {
        "task-clock",
        "cpu-clock",
        "page-faults",
        "faults",
        "minor-faults",
        "major-faults",
        "context-switches",
        "cs",
        "cpu-migrations",
        "migrations",
        "alignment-faults",
        "emulation-faults",
    }
)
#: perf's generic hardware events (need a PMU: not in most VMs).
HARDWARE_EVENTS = frozenset(
    {
        "cycles",
        "cpu-cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-instructions",
        "branch-misses",
        "bus-cycles",
        "ref-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "L1-icache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-load-misses",
    }
)
#: Where the kernel lists a machine's event sources (a hardware PMU: cpu, armv8_…).
PMU_DEVICES = "/sys/bus/event_source/devices"
#: Counters computed from others: name → (numerator, denominator).
DERIVED = {"ipc": ("instructions", "cycles")}

# A generic or named event with modifiers ("page-faults:u", "sched:sched_switch"), or a
# PMU event ("cpu/event=0x3c,umask=0/u"). Commas separate events elsewhere.
_EVENT = re.compile(
    r"[A-Za-z0-9_][A-Za-z0-9_.-]*(?::[A-Za-z0-9_.-]+)*"
    r"|[A-Za-z0-9_.-]+/[A-Za-z0-9_.,=:-]*/[A-Za-z]*"
)


class CounterError(Exception):
    """A counter that cannot be counted or read (one line: the event and why)."""


def event_problem(event: str) -> str | None:
    """Why ``event`` cannot be a counter name (None: it can)."""
    if event in DERIVED:
        return f"'{event}' is computed from {' and '.join(DERIVED[event])}, not counted; list those"
    if not _EVENT.fullmatch(event):
        return f"'{event}' is not a perf event name (perf list shows them)"
    return None


def counter_names(events: list[str]) -> set[str]:
    """What a phase counting ``events`` reports: each event, and IPC with both its parts."""
    names = set(events)
    names |= {k for k, parts in DERIVED.items() if all(p in names for p in parts)}
    return names


def perf_stat_command(command: str, shell: bool, events: list[str], out: str) -> str:
    """``command`` run under ``perf stat``, counting ``events`` (and its children) into
    ``out`` as CSV. A shell command keeps its shell: ``exec perf stat … -- /bin/sh -c CMD``."""
    prefix = f"perf stat -x, -o {shlex.quote(out)} -e {shlex.quote(','.join(events))} --"
    if shell:
        return f"exec {prefix} /bin/sh -c {shlex.quote(command)}"
    return f"{prefix} {command}"


@dataclass(frozen=True)
class CounterReading:
    """One phase's counts: event → value (task-clock in ms, as perf prints it), with the
    share of the run time each event was counted (below 100%: multiplexed, value scaled)."""

    values: dict[str, float]
    units: dict[str, str] = field(default_factory=dict)
    counted_pct: dict[str, float] = field(default_factory=dict)


def parse_perf_stat(
    text: str, events: list[str], why: Callable[[str], str] | None = None, where: str = "here"
) -> CounterReading:
    """The counts of ``events`` in ``perf stat -x,`` output; CounterError for an event that
    was not supported (``where``: "here", "on host dut"; ``why(event)`` says what the
    machine lacks) or not counted, or missing."""
    rows = [_row(line) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    found = [r for r in rows if r is not None]
    by_name = {r[2]: r for r in found}
    values: dict[str, float] = {}
    units: dict[str, str] = {}
    counted: dict[str, float] = {}
    for k, event in enumerate(events):
        row = by_name.get(event)
        if row is None and len(found) == len(events):
            row = found[k]  # perf printed the event under another spelling: same order
        if row is None:
            raise CounterError(f"counter '{event}': perf stat printed no count for it")
        raw, unit, _name, pct = row
        if raw == "<not supported>":
            reason = why(event) if why is not None else ""
            raise CounterError(f"counter '{event}' is not supported {where}{reason}")
        if raw == "<not counted>":
            raise CounterError(
                f"counter '{event}' was not counted (perf could not schedule it: "
                "too many events for the PMU, or nothing ran)"
            )
        try:
            value = float(raw)
        except ValueError:
            raise CounterError(f"counter '{event}': perf stat printed {raw!r}") from None
        if not math.isfinite(value):
            raise CounterError(f"counter '{event}': perf stat printed {raw!r}")
        values[event], units[event], counted[event] = value, unit, pct
    for name, (num, den) in DERIVED.items():
        if num in values and den in values and values[den] > 0:
            values[name] = values[num] / values[den]
    return CounterReading(values, units, counted)


def _row(line: str) -> tuple[str, str, str, float] | None:
    """(value, unit, event, % of time counted) of one CSV line of ``perf stat -x,``."""
    fields = line.split(",")
    if len(fields) < 3:
        return None
    if len(fields) >= 7:  # value,unit,event,run time,pct,metric,metric unit (event may hold ",")
        event, pct = ",".join(fields[2:-4]), fields[-3]
    else:
        event, pct = fields[2], fields[4] if len(fields) > 4 else "100"
    try:
        share = float(pct)
    except ValueError:
        share = 100.0
    return fields[0].strip(), fields[1].strip(), event.strip(), share


def missing_pmu_reason(event: str, root: Path = Path("/")) -> str:
    """Why a hardware event is not supported on this machine: said in a few words (for the
    error line)."""
    try:
        pmus = [p.name for p in (root / PMU_DEVICES.lstrip("/")).iterdir()]
    except OSError:
        return ""
    return pmu_reason(event, pmus, "on this machine")


def pmu_reason(event: str, pmus: list[str], where: str) -> str:
    """Why a hardware event is not supported where the event sources are ``pmus`` (the
    names in `PMU_DEVICES` there; ``where``: "on this machine", "there"); "" when a PMU is
    among them or the event is not a hardware one."""
    if not pmus or event.split(":")[0] not in HARDWARE_EVENTS:
        return ""
    if any(p.startswith(("cpu", "armv", "arm_")) for p in pmus):
        return ""
    return (
        f": no hardware PMU {where} ({PMU_DEVICES} has only {', '.join(sorted(pmus))}; "
        "a VM without PMU passthrough); software events (page-faults, "
        "context-switches, task-clock, cpu-migrations) still work"
    )


def perf_failure(stderr: str, paranoid: str | None = None, where: str = "here") -> str:
    """One line of why ``perf stat`` could not start (its stderr), with what to do;
    ``where`` it ran ("here", "on host dut") and its perf_event_paranoid there (None: read
    this machine's)."""
    text = stderr.strip()
    if not text:
        return f"perf stat failed {where} without a message"
    if "perf_event_paranoid" in text or "Permission denied" in text or "EACCES" in text:
        level = _paranoid() if paranoid is None else paranoid or "unknown"
        return (
            f"perf may not count {where}: kernel.perf_event_paranoid = {level} "
            "(run as root, or sysctl kernel.perf_event_paranoid=1 to count kernel events "
            "of your own processes)"
        )
    if "event syntax error" in text:
        bad = re.search(r"'([^']*)'", text)
        return f"perf {where} does not know an event{f' near {bad.group(1)!r}' if bad else ''}"
    if "not found" in text and "perf" in text.split("\n", 1)[0]:
        return f"perf is not installed {where} (Debian: apt-get install linux-perf)"
    first = next(line.strip() for line in text.splitlines() if line.strip())
    return first[:200] if where == "here" else f"{where}: {first[:200]}"


def _paranoid() -> str:
    try:
        return Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    except OSError:
        return "unknown"


def perf_available() -> bool:
    """Whether a ``perf`` program is on this machine's PATH."""
    return any(
        os.access(Path(d) / "perf", os.X_OK) for d in os.environ.get("PATH", "").split(":") if d
    )
