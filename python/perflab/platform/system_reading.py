"""How the system checks read a machine: a `perflab.hosts.base.Reader` (read a file, list
a folder) of a host, or of a copied or made-up tree (`TreeReader`, for tests), the
`Check` each check yields, and the small parsers of ``/proc`` and ``/sys`` they share
(`perflab.platform.system_state` runs the checks)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perflab.hosts.base import Queried, Reader
from perflab.hosts.local import LocalHost
from perflab.hosts.proc_text import meminfo_bytes, parse_cpu_list

Status = Literal["ok", "warn", "unknown"]

#: Check name → its title in a table.
TITLES = {
    "governor": "CPU governor",
    "turbo": "Turbo boost",
    "smt": "SMT (hyper-threads)",
    "load": "Load average",
    "processes": "Busiest processes",
    "memory": "Free memory",
    "swap": "Swap in use",
    "throttling": "Thermal throttling",
    "aslr": "ASLR",
    "perf_event_paranoid": "perf_event_paranoid",
}

CPU_DIR = "/sys/devices/system/cpu"


class TreeReader:
    """A `perflab.hosts.base.Reader` of a file tree laid out like ``/`` under ``root``
    (``/proc/loadavg`` is ``root/proc/loadavg``): a machine's state copied, or made up for
    a test; it runs no command."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._files = LocalHost()

    def _at(self, path: str) -> str:
        return str(self.root / path.lstrip("/"))

    def read_file(self, path: str) -> bytes | None:
        return self._files.read_file(self._at(path))

    def list_dir(self, path: str) -> list[str] | None:
        return self._files.list_dir(self._at(path))

    @staticmethod
    def query(argv: list[str], timeout: float) -> Queried | None:
        return None


@dataclass(frozen=True)
class Check:
    """One check: ``message`` says what to do (warn) or why it is unknown."""

    name: str
    status: Status
    value: str
    message: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES.get(self.name, self.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "value": self.value,
            "message": self.message,
            "data": self.data,
        }


# -- reading


def read_text(reader: Reader, path: str) -> str | None:
    data = reader.read_file(path)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    return text or None


def read_int(reader: Reader, path: str) -> int | None:
    text = read_text(reader, path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def online_cpus(reader: Reader) -> list[int]:
    """The online CPUs: sysfs's list, else its cpuN folders, else /proc/cpuinfo's count."""
    text = read_text(reader, f"{CPU_DIR}/online")
    if text:
        try:
            return sorted(parse_cpu_list(text))
        except ValueError:
            pass
    names = reader.list_dir(CPU_DIR) or []
    found = sorted(int(n[3:]) for n in names if re.fullmatch(r"cpu\d+", n))
    if found:
        return found
    cpuinfo = read_text(reader, "/proc/cpuinfo") or ""
    return list(range(len(re.findall(r"^processor\s*:", cpuinfo, re.M))))


def system_clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK")) or 100
    except (ValueError, OSError, AttributeError):
        return 100


def read_meminfo(reader: Reader) -> dict[str, int]:
    """/proc/meminfo in bytes."""
    return meminfo_bytes(read_text(reader, "/proc/meminfo") or "")


def counted(values: Iterable[str]) -> str:
    """'performance' when all agree, else 'powersave ×1, performance ×1'."""
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{v} ×{n}" for v, n in sorted(counts.items(), key=lambda x: -x[1]))


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover
