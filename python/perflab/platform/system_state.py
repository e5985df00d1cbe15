"""The system's state as checks that say what to do: frequency governor, turbo, SMT, load
average, the busiest other processes, memory and swap, thermal throttling, ASLR and
perf_event_paranoid (`perflab check`, and the snapshots recorded with every experiment).

Everything is read from ``/proc`` and ``/sys`` through a `Reader` (read a file, list
a folder), so the same code reads this machine (`perflab.hosts.local.LocalHost`), a copied or
made-up tree (`TreeReader`, for tests) or another host (`perflab.hosts.remote.RemoteHost`, its
process table fetched at once by `perflab.execution.system_snapshots`). What cannot be read — a container without
``/sys/devices/system/cpu/cpu*/cpufreq``, a VM without thermal counters, a system that is
not Linux — is a check of status ``unknown`` with the reason; nothing here raises.

A state's JSON (``perflab.system/1``)::

    {"format": "perflab.system/1",
     "checks": [{"name": "governor", "status": "ok" | "warn" | "unknown",
                 "value": "performance", "message": "what to do" | null,
                 "data": {...numbers behind the value...}}, ...]}
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from perflab.hosts.base import Reader
from perflab.hosts.local import LocalHost
from perflab.hosts.proc_text import PidStat, parse_loadavg, parse_pid_stat
from perflab.platform.system_reading import (
    CPU_DIR,
    TITLES,
    Check,
    Status,
    TreeReader,
    counted,
    human_bytes,
    online_cpus,
    read_int,
    read_meminfo,
    read_text,
    system_clock_ticks,
)

__all__ = [
    "FORMAT",
    "TITLES",
    "Check",
    "Reader",
    "Status",
    "SystemState",
    "TreeReader",
    "read_system_state",
]

FORMAT = "perflab.system/1"

#: Seconds between the two samples of every process's CPU time.
SAMPLE_INTERVAL = 0.25
#: How many of the busiest other processes a state lists.
TOP_PROCESSES = 3
#: Other processes together using more than this share of one CPU make "processes" warn.
BUSY_SHARE = 0.25
#: Available memory below this fraction of RAM makes "memory" warn.
LOW_MEMORY = 0.10
#: Swap in use above this fraction of RAM makes "swap" warn.
SWAP_IN_USE = 0.01


@dataclass(frozen=True)
class SystemState:
    checks: list[Check]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == "warn"]

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "checks": [c.to_json() for c in self.checks]}


def read_system_state(
    reader: Reader | None = None,
    *,
    interval: float = SAMPLE_INTERVAL,
    own_pid: int | None = None,
    wait: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    clock_ticks: int | None = None,
) -> SystemState:
    """Every check of the system ``reader`` reads (default: this machine).

    The busiest processes are measured: every process's CPU time is read twice,
    ``interval`` seconds apart (``wait`` and ``clock`` are injectable for tests); ``own_pid``
    and its descendants are left out (default: this process, on this machine).
    """
    if reader is None:
        reader = LocalHost()
        own_pid = os.getpid() if own_pid is None else own_pid
    cpus = online_cpus(reader)
    meminfo = read_meminfo(reader)
    return SystemState(
        [
            governor_check(reader, cpus),
            turbo_check(reader),
            smt_check(reader),
            load_check(reader, len(cpus)),
            processes_check(
                reader,
                interval=interval,
                own_pid=own_pid,
                wait=wait,
                clock=clock,
                clock_ticks=clock_ticks or system_clock_ticks(),
            ),
            memory_check(meminfo),
            swap_check(meminfo),
            throttling_check(reader, cpus),
            aslr_check(reader),
            paranoid_check(reader),
        ]
    )


# -- the checks


def governor_check(reader: Reader, cpus: list[int]) -> Check:
    governors = {
        cpu: g
        for cpu in cpus
        if (g := read_text(reader, f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_governor")) is not None
    }
    if not governors:
        return Check(
            "governor",
            "unknown",
            "?",
            "no cpufreq/scaling_governor in /sys (a VM, a container, or no frequency driver): "
            "the host decides the frequency",
        )
    data = {"governors": {str(c): g for c, g in governors.items()}}
    value = counted(governors.values())
    slow = [c for c, g in governors.items() if g != "performance"]
    if not slow:
        return Check("governor", "ok", value, data=data)
    names = " or ".join(sorted({governors[c] for c in slow}))
    return Check(
        "governor",
        "warn",
        value,
        f"CPU governor is {names} on {len(slow)} of {len(governors)} CPUs: set performance "
        "(sudo cpupower frequency-set -g performance) for steadier runs",
        data,
    )


def turbo_check(reader: Reader) -> Check:
    no_turbo = read_int(reader, f"{CPU_DIR}/intel_pstate/no_turbo")
    if no_turbo is not None:
        if no_turbo:
            return Check("turbo", "ok", "off (intel_pstate)", data={"turbo": False})
        return Check(
            "turbo",
            "warn",
            "on (intel_pstate)",
            "turbo boost is on: the clock follows temperature and the other cores' load; "
            "turn it off for steadier runs (echo 1 | sudo tee "
            f"{CPU_DIR}/intel_pstate/no_turbo)",
            {"turbo": True},
        )
    boost = read_int(reader, f"{CPU_DIR}/cpufreq/boost")
    if boost is not None:
        if not boost:
            return Check("turbo", "ok", "off (cpufreq boost)", data={"turbo": False})
        return Check(
            "turbo",
            "warn",
            "on (cpufreq boost)",
            "frequency boost is on: the clock follows temperature and the other cores' load; "
            f"turn it off for steadier runs (echo 0 | sudo tee {CPU_DIR}/cpufreq/boost)",
            {"turbo": True},
        )
    return Check(
        "turbo",
        "unknown",
        "?",
        "neither intel_pstate/no_turbo nor cpufreq/boost in /sys (a VM, a container, "
        "or no boost control)",
    )


def smt_check(reader: Reader) -> Check:
    active = read_int(reader, f"{CPU_DIR}/smt/active")
    if active is None:
        return Check("smt", "unknown", "?", f"{CPU_DIR}/smt/active cannot be read")
    if not active:
        return Check("smt", "ok", "off", data={"active": False})
    return Check(
        "smt",
        "warn",
        "on",
        "SMT is on: two hyper-threads of a core share its caches and units; pin phases "
        "with cores = N (perflab picks no two siblings) or turn it off "
        f"(echo off | sudo tee {CPU_DIR}/smt/control)",
        {"active": True},
    )


def load_check(reader: Reader, cpus: int) -> Check:
    found = parse_loadavg(read_text(reader, "/proc/loadavg"))
    if found is None:
        return Check("load", "unknown", "?", "/proc/loadavg cannot be read (not Linux?)")
    load1, load5, load15 = found
    data: dict[str, Any] = {"load1": load1, "load5": load5, "load15": load15, "cpus": cpus}
    value = f"{load1:.2f} {load5:.2f} {load15:.2f}"
    if cpus and load1 > cpus / 2:
        return Check(
            "load",
            "warn",
            value,
            f"load average {load1:.2f} is above half of the {cpus} CPUs: other work "
            "competes with the runs; stop it (see the busiest processes) or use a quieter "
            "machine",
            data,
        )
    return Check("load", "ok", value, data=data)


def _stat_times(reader: Reader) -> dict[int, PidStat] | None:
    """pid → its /proc/PID/stat (name, parent pid, CPU ticks); None when /proc cannot be listed."""
    names = reader.list_dir("/proc")
    if names is None:
        return None
    out: dict[int, PidStat] = {}
    for name in names:
        if not name.isdigit():
            continue
        # None: ended between the listing and the read
        if (found := parse_pid_stat(read_text(reader, f"/proc/{name}/stat"))) is not None:
            out[int(name)] = found
    return out


def _tree(pids: dict[int, PidStat], root: int | None) -> set[int]:
    """``root`` and its descendants among ``pids``."""
    if root is None:
        return set()
    children: dict[int, list[int]] = {}
    for pid, stat in pids.items():
        children.setdefault(stat.ppid, []).append(pid)
    tree, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in tree:
                tree.add(child)
                todo.append(child)
    return tree


class ProcessSample(NamedTuple):
    """The processes that used CPU over a sampling window (`sample_processes`)."""

    processes: list[dict[str, Any]]  # {"pid", "name", "cpu"}, busiest first
    seconds: float  # the window's length as measured


def sample_processes(
    reader: Reader,
    *,
    interval: float = SAMPLE_INTERVAL,
    own_pid: int | None = None,
    wait: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    clock_ticks: int = 100,
) -> ProcessSample | None:
    """Every process outside ``own_pid``'s tree that used CPU between two reads of its
    times ``interval`` seconds apart, busiest first: [{"pid", "name", "cpu"}] (cpu: the
    share of one CPU), and the seconds measured; None when /proc cannot be read."""
    first = _stat_times(reader)
    start = clock()
    if not first:
        return None
    wait(interval)
    second = _stat_times(reader)
    elapsed = clock() - start
    if not second or elapsed <= 0:
        return None
    own = _tree(second, own_pid) | _tree(first, own_pid)
    shares: list[tuple[float, int, str]] = []
    for pid, stat in second.items():
        if pid in own or pid not in first:
            continue
        delta = stat.cpu_ticks - first[pid].cpu_ticks
        if delta > 0:
            shares.append((delta / clock_ticks / elapsed, pid, stat.name))
    shares.sort(key=lambda x: (-x[0], x[1]))
    return ProcessSample(
        [{"pid": pid, "name": name, "cpu": cpu} for cpu, pid, name in shares], elapsed
    )


def processes_check(
    reader: Reader,
    *,
    interval: float = SAMPLE_INTERVAL,
    own_pid: int | None = None,
    wait: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    clock_ticks: int = 100,
) -> Check:
    sampled = sample_processes(
        reader,
        interval=interval,
        own_pid=own_pid,
        wait=wait,
        clock=clock,
        clock_ticks=clock_ticks,
    )
    if sampled is None:
        return Check("processes", "unknown", "?", "/proc cannot be listed (not Linux?)")
    used, elapsed = sampled
    top = [{**p, "cpu": round(p["cpu"], 4)} for p in used[:TOP_PROCESSES]]
    total = sum(p["cpu"] for p in used)
    data = {"top": top, "others_cpu": round(total, 4), "seconds": round(elapsed, 3)}
    value = ", ".join(f"{p['name']} ({p['pid']}) {p['cpu']:.0%}" for p in top) or "none busy"
    if total <= BUSY_SHARE:
        return Check("processes", "ok", value, data=data)
    busiest = top[0]
    return Check(
        "processes",
        "warn",
        value,
        f"other processes used {total:.0%} of a CPU over {elapsed:.2f} s, most of all "
        f"{busiest['name']} (pid {busiest['pid']}, {busiest['cpu']:.0%}): stop them, or pin "
        "phases away from them with cores = N",
        data,
    )


def memory_check(meminfo: dict[str, int]) -> Check:
    total, available = meminfo.get("MemTotal"), meminfo.get("MemAvailable")
    if not total or available is None:
        return Check("memory", "unknown", "?", "/proc/meminfo has no MemTotal/MemAvailable")
    data = {"total": total, "available": available}
    value = f"{human_bytes(available)} of {human_bytes(total)}"
    if available < LOW_MEMORY * total:
        return Check(
            "memory",
            "warn",
            value,
            f"only {available / total:.0%} of memory is available: runs may lose the page "
            "cache or be swapped out; stop what holds the memory",
            data,
        )
    return Check("memory", "ok", value, data=data)


def swap_check(meminfo: dict[str, int]) -> Check:
    total, free = meminfo.get("SwapTotal"), meminfo.get("SwapFree")
    ram = meminfo.get("MemTotal")
    if total is None or free is None or not ram:
        return Check("swap", "unknown", "?", "/proc/meminfo has no SwapTotal/SwapFree")
    used = max(0, total - free)
    data = {"total": total, "used": used}
    if not total:
        return Check("swap", "ok", "no swap", data=data)
    value = f"{human_bytes(used)} of {human_bytes(total)}"
    if used > SWAP_IN_USE * ram:
        return Check(
            "swap",
            "warn",
            value,
            f"{human_bytes(used)} is swapped out: a run touching swapped memory waits for the "
            "disk; free memory, then sudo swapoff -a && sudo swapon -a",
            data,
        )
    return Check("swap", "ok", value, data=data)


def throttling_check(reader: Reader, cpus: list[int]) -> Check:
    core = package = 0
    seen = False
    for cpu in cpus:
        base = f"{CPU_DIR}/cpu{cpu}/thermal_throttle"
        c, p = (
            read_int(reader, f"{base}/core_throttle_count"),
            read_int(reader, f"{base}/package_throttle_count"),
        )
        seen = seen or c is not None or p is not None
        core += c or 0
        package += p or 0
    if not seen:
        return Check(
            "throttling",
            "unknown",
            "?",
            "no thermal_throttle counters in /sys (a VM, a container, or not an x86 CPU)",
        )
    data = {"core": core, "package": package}
    value = f"core {core}, package {package}"
    if core or package:
        return Check(
            "throttling",
            "warn",
            value,
            f"the CPUs were throttled for heat since boot ({value} events, summed over CPUs): "
            "check the cooling; comparisons warn when the counts rise during an experiment",
            data,
        )
    return Check("throttling", "ok", value, data=data)


_ASLR = {0: "off", 1: "partial", 2: "full"}


def aslr_check(reader: Reader) -> Check:
    value = read_int(reader, "/proc/sys/kernel/randomize_va_space")
    if value is None:
        return Check("aslr", "unknown", "?", "/proc/sys/kernel/randomize_va_space cannot be read")
    text = _ASLR.get(value, str(value))
    if value == 2:
        return Check("aslr", "ok", text, data={"randomize_va_space": value})
    return Check(
        "aslr",
        "warn",
        text,
        "ASLR is not full: every run gets the same memory layout, so a layout's luck looks "
        "like the variant's effect; sudo sysctl kernel.randomize_va_space=2",
        {"randomize_va_space": value},
    )


def paranoid_check(reader: Reader) -> Check:
    value = read_int(reader, "/proc/sys/kernel/perf_event_paranoid")
    if value is None:
        return Check(
            "perf_event_paranoid",
            "unknown",
            "?",
            "/proc/sys/kernel/perf_event_paranoid cannot be read (no perf events?)",
        )
    data = {"perf_event_paranoid": value}
    if value <= 2:
        return Check("perf_event_paranoid", "ok", str(value), data=data)
    if _uid(reader) == 0:  # root samples whatever the setting (a device's login, often)
        return Check("perf_event_paranoid", "ok", f"{value} (root)", data=data)
    return Check(
        "perf_event_paranoid",
        "warn",
        str(value),
        f"perf_event_paranoid is {value}: perf cannot count a step's events without root; "
        "sudo sysctl kernel.perf_event_paranoid=2",
        data,
    )


def _uid(reader: Reader) -> int | None:
    """The real user id of whoever reads for ``reader``: this process here, the login
    there (``/proc/self`` is the reading process)."""
    status = read_text(reader, "/proc/self/status") or ""
    for line in status.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return None
