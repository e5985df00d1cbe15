"""Parsers of the texts a Linux host describes itself in — /proc files, sysfs values,
os-release, lscpu — shared by environment capture (`perflab.hosts.environment`), the
system checks (`perflab.platform`) and the monitors (`perflab.observe`): one reading of
each format. Pure functions of text; where a reader says so, what does not parse is
None (or left out), never an exception."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any, NamedTuple

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


class PidStat(NamedTuple):
    """The fields of /proc/PID/stat that perflab reads."""

    name: str  # the command's name (field 2, without its parentheses)
    ppid: int  # the parent's pid (field 4)
    cpu_ticks: int  # utime + stime (fields 14 and 15), in clock ticks
    start_time: str  # when the process started (field 22), as written: tells pid reuse apart


def parse_pid_stat(text: str | None) -> PidStat | None:
    """/proc/PID/stat's fields (`PidStat`); None for nothing or what does not parse. The
    name may hold spaces and parentheses: the fields after it follow its last ``)``."""
    head, paren, tail = (text or "").rpartition(")")
    rest = tail.split()
    if not paren or len(rest) < 20 or "(" not in head:
        return None
    try:
        return PidStat(head.split("(", 1)[1], int(rest[1]), int(rest[11]) + int(rest[12]), rest[19])
    except ValueError:
        return None


def parse_loadavg(text: str | None) -> tuple[float, float, float] | None:
    """/proc/loadavg's 1, 5 and 15 minute load averages: ``"0.52 0.58 0.59 1/389 12345"`` →
    (0.52, 0.58, 0.59); None for nothing, or for what is not three numbers first."""
    fields = (text or "").split()[:3]
    try:
        one, five, fifteen = (float(x) for x in fields)
    except ValueError:
        return None
    return one, five, fifteen


def to_int(text: str | None) -> int | None:
    """``" 42\\n"`` → 42; None for None or what is not a whole number."""
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def cpu_list_or_none(text: str | None) -> list[int] | None:
    """The kernel's CPU list format: ``"0-3,8,10-11"`` → [0, 1, 2, 3, 8, 10, 11]; None for
    nothing, or for what is not one."""
    if text is None or not text.strip():
        return None
    try:
        return sorted(parse_cpu_list(text))
    except ValueError:
        return None


def format_cpu_list(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 3, 8] → ``"0-3,8"``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """/proc/cpuinfo as one dict per blank-line separated block (keys stripped)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current.setdefault(key.strip(), value.strip())
    if current:
        blocks.append(current)
    return blocks


def parse_key_values(text: str, sep: str = ":") -> dict[str, str]:
    """``Key: value`` lines (lscpu, /proc/meminfo); the first occurrence of a key wins."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, found, value = line.partition(sep)
        if found and key.strip():
            out.setdefault(key.strip(), value.strip())
    return out


def parse_os_release(text: str) -> dict[str, str]:
    """os-release's shell-style ``KEY="value"`` lines."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, found, value = line.strip().partition("=")
        if not found or key.startswith("#"):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value.strip("\"'")]
        out[key] = " ".join(words)
    return out


def parse_swaps(text: str) -> list[dict[str, Any]]:
    """/proc/swaps rows (sizes in KiB there) as dicts with sizes in bytes."""
    rows = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        name, kind, size, used, priority = fields[:5]
        size_kib, used_kib = to_int(size), to_int(used)
        rows.append(
            {
                "name": name,
                "type": kind,
                "size_bytes": size_kib * 1024 if size_kib is not None else None,
                "used_bytes": used_kib * 1024 if used_kib is not None else None,
                "priority": to_int(priority),
            }
        )
    return rows


def bracketed(text: str | None) -> str | None:
    """THP files mark the active choice: ``always [madvise] never`` → ``madvise``."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text.strip() or None)


def human_cache_size(raw: str) -> str:
    """sysfs ``32K`` / ``32768K`` → ``32 KiB`` / ``32 MiB``."""
    match = re.fullmatch(r"(\d+)\s*([KMG]?)B?", raw.strip())
    if not match:
        return raw.strip()
    size = int(match.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match.group(2)]
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"
