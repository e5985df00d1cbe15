"""CPU topology as Linux exposes it under /sys/devices/system/cpu."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from perflab.errors import PerflabError
from perflab.hosts.proc_text import parse_cpu_list


@dataclass(frozen=True)
class LogicalCpu:
    """One logical CPU (hardware thread).

    siblings:     logical CPUs of the same physical core (SMT threads), itself included.
    l2:           logical CPUs sharing its L2 cache (itself included); None if unknown.
    max_freq_khz: cpufreq's cpuinfo_max_freq in kHz; None without cpufreq (e.g. in a VM).
    capacity:     the scheduler's cpu_capacity (big.LITTLE), None if not exposed.
    core_type:    "P"/"E" on Intel hybrid parts (cpu_core / cpu_atom PMUs), else None.
    allowed:      in this process's affinity mask.
    """

    cpu: int
    package: int
    siblings: frozenset[int]
    l2: frozenset[int] | None = None
    max_freq_khz: int | None = None
    capacity: int | None = None
    core_type: str | None = None
    online: bool = True
    allowed: bool = True

    @property
    def core(self) -> frozenset[int]:
        """Identity of the physical core: its set of SMT threads."""
        return self.siblings


@dataclass(frozen=True)
class Topology:
    cpus: tuple[LogicalCpu, ...]

    def cpu(self, n: int) -> LogicalCpu:
        for c in self.cpus:
            if c.cpu == n:
                return c
        raise KeyError(n)

    def usable(self) -> list[LogicalCpu]:
        return [c for c in self.cpus if c.online and c.allowed]

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {
                "cpu": c.cpu,
                "package": c.package,
                "siblings": sorted(c.siblings),
                "l2": sorted(c.l2) if c.l2 is not None else None,
                "max_freq_khz": c.max_freq_khz,
                "capacity": c.capacity,
                "core_type": c.core_type,
                "online": c.online,
                "allowed": c.allowed,
            }
            for c in self.cpus
        ]


def read_topology(root: str | Path = "/", allowed: set[int] | None = None) -> Topology:
    """Reads the topology under ``root``/sys (``root`` lets tests use a copied tree).

    allowed: the CPUs this process may use; defaults to its affinity mask.
    """
    base = Path(root) / "sys/devices/system/cpu"
    if not base.is_dir():
        raise PerflabError(f"no CPU topology at {base} (sysfs not mounted?)")
    if allowed is None:
        allowed = set(os.sched_getaffinity(0))
    present = _read_list(base / "present") or frozenset(
        int(p.name[3:]) for p in base.glob("cpu[0-9]*") if p.name[3:].isdigit()
    )
    online = _read_list(base / "online") or present
    hybrid = {}
    for pmu, label in (("cpu_core", "P"), ("cpu_atom", "E")):
        for c in _read_list(Path(root) / f"sys/devices/{pmu}/cpus") or ():
            hybrid[c] = label
    cpus = []
    for n in sorted(present):
        d = base / f"cpu{n}"
        topo = d / "topology"
        siblings = (
            _read_list(topo / "thread_siblings_list")
            or _read_list(topo / "core_cpus_list")
            or frozenset({n})
        )
        cpus.append(
            LogicalCpu(
                cpu=n,
                package=_read_int(topo / "physical_package_id", 0),
                siblings=siblings,
                l2=_l2_of(d),
                max_freq_khz=_read_int(d / "cpufreq/cpuinfo_max_freq", None),
                capacity=_read_int(d / "cpu_capacity", None),
                core_type=hybrid.get(n),
                online=n in online,
                allowed=n in allowed,
            )
        )
    if not cpus:
        raise PerflabError(f"no CPUs found under {base}")
    return Topology(tuple(cpus))


def _l2_of(cpu_dir: Path) -> frozenset[int] | None:
    for idx in sorted(cpu_dir.glob("cache/index*")):
        if _read_int(idx / "level", None) == 2 and _read_text(idx / "type") in ("Unified", "Data"):
            return _read_list(idx / "shared_cpu_list")
    return None


def _read_text(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None


_D = TypeVar("_D", int, None)


def _read_int(p: Path, default: _D) -> int | _D:
    t = _read_text(p)
    try:
        return int(t) if t is not None else default
    except ValueError:
        return default


def _read_list(p: Path) -> frozenset[int] | None:
    t = _read_text(p)
    if not t:
        return None
    try:
        return parse_cpu_list(t)
    except ValueError:
        return None
