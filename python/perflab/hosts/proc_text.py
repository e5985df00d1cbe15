"""Parsers of the texts a Linux host gives in ``/proc`` and ``/sys``, shared by
environment capture (`perflab.run`), the system checks (`perflab.platform`) and the
monitors (`perflab.observe`): one reading of each format."""

from __future__ import annotations

import re

#: ``Name:   123 kB`` (or a count with no unit) of /proc/meminfo.
_MEMINFO_LINE = re.compile(r"^([\w()]+):\s+(\d+)(?:\s+(kB))?\s*$")


def parse_cpu_list(text: str) -> frozenset[int]:
    """'0-3,8,10-11' → {0, 1, 2, 3, 8, 10, 11} (the kernel's cpulist format); ValueError
    when it is not one."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def parse_meminfo(text: str) -> dict[str, tuple[int, bool]]:
    """/proc/meminfo as name → (number, in kB): ``MemFree: 123 kB`` → ``(123, True)``,
    ``HugePages_Total: 0`` → ``(0, False)``; other lines are left out."""
    out: dict[str, tuple[int, bool]] = {}
    for line in text.splitlines():
        m = _MEMINFO_LINE.match(line.strip())
        if m:
            out.setdefault(m.group(1), (int(m.group(2)), m.group(3) is not None))
    return out


def meminfo_bytes(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes (counts with no unit as they are)."""
    return {name: n * 1024 if kb else n for name, (n, kb) in parse_meminfo(text).items()}
