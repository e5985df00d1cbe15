"""Warnings from the system snapshots recorded with an experiment (pure).

The runner stores a snapshot of the system checks (`perflab.platform.system_state`, JSON
``perflab.system/1``) at the experiment's start and after each completed block, as
experiment-level artifacts named ``system/NNN`` (`perflab.execution.system_snapshots`). Each
snapshot also says which variants ran since the one before. Here they become typed
warnings on the comparison when the conditions were noisy or changed:

* ``system_load`` — the load average was above half the CPUs at a start (later snapshots'
  load averages include the experiment's own runs, so they are not judged);
* ``busy_processes`` — processes outside perflab used more than a quarter of a CPU while a
  snapshot measured them;
* ``governor_changed``, ``turbo_changed``, ``smt_changed``, ``aslr_changed`` — the setting
  differed between snapshots;
* ``thermal_throttling`` — the CPUs' thermal throttle counters rose during the experiment;
* ``memory_low``, ``swap_grew`` — little memory available, or swap use grew by more than
  64 MiB.

When what happened touches the runs of some variants only, the warning says so: the
conditions differed between variants, which the comparison cannot tell from their effect.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from perflab.stats import StatWarning

#: Swap use growing by more than this (bytes) during an experiment is warned about.
SWAP_GROWTH = 64 * 2**20

#: Checks whose value should not change during an experiment, and what to do if it did.
_STEADY = {
    "governor": (
        "the CPU governor",
        "keep it at performance (sudo cpupower frequency-set -g performance)",
    ),
    "turbo": ("turbo boost", "keep it off for the whole experiment"),
    "smt": ("SMT", "leave SMT as it is for the whole experiment"),
    "aslr": ("ASLR", "keep kernel.randomize_va_space at 2"),
}


def parse_snapshots(blobs: list[bytes]) -> list[dict[str, Any]]:
    """The snapshots that parse as JSON objects with checks, in the order given."""
    out = []
    for blob in blobs:
        try:
            doc = json.loads(blob)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("checks"), list):
            out.append(doc)
    return out


def _check(snapshot: dict[str, Any], name: str) -> dict[str, Any] | None:
    for c in snapshot.get("checks", []):
        if isinstance(c, dict) and c.get("name") == name:
            return c
    return None


def _printable(text: Any) -> str:
    """Text read from a system (a process's name, a sysfs value), with anything a terminal
    could act on — control characters, bidi overrides — shown as '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(text))[:80]


def _label(snapshot: dict[str, Any]) -> str:
    label = _printable(snapshot.get("label") or "in a snapshot")
    return "at the start" if label == "start" else label


def _variants(snapshots: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for s in snapshots:
        for v in s.get("variants") or []:
            seen[_printable(v)] = None
    return list(seen)


def _which(affected: list[dict[str, Any]], every: list[str]) -> str:
    """'' when the affected snapshots cover every variant; else a clause naming those they do."""
    touched = _variants(affected)
    if not touched or len(every) < 2 or set(touched) >= set(every):
        return ""
    return (
        f", during the runs of {', '.join(touched)} only — so the conditions differed "
        "between variants and the comparison cannot tell them from the variants' effect"
    )


def system_warnings(snapshots: list[dict[str, Any]]) -> list[StatWarning]:
    """Every warning the snapshots (oldest first) call for, host by host: with snapshots of
    several hosts each warning says which host it is about."""
    hosts: dict[str, list[dict[str, Any]]] = {}
    for s in snapshots:
        hosts.setdefault(_printable(s.get("host") or ""), []).append(s)
    if len(hosts) < 2:
        return _host_warnings(snapshots)
    every = _variants(snapshots)  # a host's snapshots are judged against every variant
    return [
        StatWarning(w.code, f"on host {host}: {w.message}", {**w.details, "host": host})
        for host, taken in hosts.items()
        for w in _host_warnings(taken, every)
    ]


def _host_warnings(
    snapshots: list[dict[str, Any]], every: list[str] | None = None
) -> list[StatWarning]:
    """The warnings of one host's snapshots."""
    if not snapshots:
        return []
    every = every if every is not None else _variants(snapshots)
    out: list[StatWarning] = []
    out += _load(snapshots)
    out += _busy(snapshots, every)
    out += _changed(snapshots)
    out += _throttled(snapshots, every)
    out += _memory(snapshots, every)
    return out


def _load(snapshots: list[dict[str, Any]]) -> list[StatWarning]:
    starts = [s for s in snapshots if s.get("label") == "start"]
    high = []
    for s in starts:
        c = _check(s, "load")
        if c and c.get("status") == "warn":
            high.append(c.get("data") or {})
    if not high:
        return []
    worst = max(high, key=lambda d: float(d.get("load1", 0.0)))
    load1, cpus = float(worst.get("load1", 0.0)), int(worst.get("cpus", 0))
    return [
        StatWarning(
            "system_load",
            f"the load average was {load1:.2f} on {cpus} CPUs when the experiment started "
            "(above half the CPUs): other work competed with the runs; rerun on a quiet "
            "machine (`perflab check` lists the busiest processes)",
            {"load1": load1, "cpus": cpus},
        )
    ]


def _busy(snapshots: list[dict[str, Any]], every: list[str]) -> list[StatWarning]:
    busy = []
    for s in snapshots:
        c = _check(s, "processes")
        if c and c.get("status") == "warn":
            busy.append((s, c.get("data") or {}))
    if not busy:
        return []
    s, data = max(busy, key=lambda x: float(x[1].get("others_cpu", 0.0)))
    top = (data.get("top") or [{}])[0]
    name = _printable(top.get("name", "?"))
    share = float(data.get("others_cpu", 0.0))
    return [
        StatWarning(
            "busy_processes",
            f"other processes used CPU in {len(busy)} of {len(snapshots)} system snapshots "
            f"(at most {share:.0%} of a CPU, {_label(s)}, most of all {name})"
            f"{_which([b for b, _ in busy], every)}; stop them, or pin phases away from them "
            "with cores = N",
            {"snapshots": len(busy), "others_cpu": share, "process": name},
        )
    ]


def _changed(snapshots: list[dict[str, Any]]) -> list[StatWarning]:
    out = []
    for name, (what, todo) in _STEADY.items():
        values: list[tuple[str, str]] = []
        for s in snapshots:
            c = _check(s, name)
            if c and c.get("status") != "unknown":
                values.append((_printable(c.get("value")), _label(s)))
        changes = [(a, b) for a, b in itertools.pairwise(values) if a[0] != b[0]]
        if not changes:
            continue
        (before, _), (after, where) = changes[0]
        out.append(
            StatWarning(
                f"{name}_changed",
                f"{what} changed during the experiment ({before} → {after}, {where}): runs "
                f"before and after ran under different conditions; {todo}, and rerun",
                {"before": before, "after": after, "changes": len(changes)},
            )
        )
    return out


def _throttle_total(s: dict[str, Any]) -> int | None:
    c = _check(s, "throttling")
    if not c or c.get("status") == "unknown":
        return None
    data = c.get("data") or {}
    return int(data.get("core", 0)) + int(data.get("package", 0))


def _throttled(snapshots: list[dict[str, Any]], every: list[str]) -> list[StatWarning]:
    rose, events = [], 0
    previous: int | None = None
    for s in snapshots:
        total = _throttle_total(s)
        if total is None:
            continue
        if previous is not None and total > previous:
            rose.append(s)
            events += total - previous
        previous = total
    if not rose:
        return []
    return [
        StatWarning(
            "thermal_throttling",
            f"the CPUs were throttled for heat during the experiment ({events} more throttle "
            f"events, first {_label(rose[0])}){_which(rose, every)}: runs ran at a lower "
            "clock; improve the cooling, turn turbo off, or leave pauses between runs",
            {"events": events, "snapshots": len(rose)},
        )
    ]


def _memory(snapshots: list[dict[str, Any]], every: list[str]) -> list[StatWarning]:
    out = []
    low = [s for s in snapshots if (_check(s, "memory") or {}).get("status") == "warn"]
    if low:
        out.append(
            StatWarning(
                "memory_low",
                f"little memory was available in {len(low)} of {len(snapshots)} system "
                f"snapshots (first {_label(low[0])}){_which(low, every)}: runs may have lost "
                "the page cache or been swapped out; free memory and rerun",
                {"snapshots": len(low)},
            )
        )
    used = []
    for s in snapshots:
        c = _check(s, "swap")
        if c and c.get("status") != "unknown":
            data = c.get("data") or {}
            used.append((int(data.get("used", 0)), s))
    if len(used) >= 2 and used[-1][0] - used[0][0] > SWAP_GROWTH:
        grew = [b for a, b in itertools.pairwise(used) if b[0] > a[0]]
        delta = used[-1][0] - used[0][0]
        out.append(
            StatWarning(
                "swap_grew",
                f"swap in use grew by {delta / 2**20:.1f} MiB during the experiment"
                f"{_which([s for _, s in grew], every)}: memory ran short and pages were "
                "swapped out; free memory and rerun",
                {"bytes": delta},
            )
        )
    return out
