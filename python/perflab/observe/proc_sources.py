"""The sources a monitor samples — which files of /proc each reads, and how one reading of
them becomes flat numbers (``{"pgfault": 123, …}``).

Each source's numbers are either counters (growing totals: summarized as per-second
rates) or gauges (levels: summarized as means); `is_counter` tells which.
"""

from __future__ import annotations

import re

from perflab.hosts.proc_text import parse_meminfo

#: source → the files one sample of it reads.
SOURCE_FILES: dict[str, tuple[str, ...]] = {
    "vmstat": ("/proc/vmstat",),
    "meminfo": ("/proc/meminfo",),
    "psi": ("/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io"),
    "cpu": ("/proc/stat",),
    "net": ("/proc/net/dev",),
}
SOURCES = tuple(SOURCE_FILES)

#: /proc/stat's per-CPU columns, in order.
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
#: /proc/net/dev's columns kept (of 16), with their positions.
NET_FIELDS = {
    "rx_bytes": 0,
    "rx_packets": 1,
    "rx_errs": 2,
    "rx_drop": 3,
    "tx_bytes": 8,
    "tx_packets": 9,
    "tx_errs": 10,
    "tx_drop": 11,
}
#: vmstat totals whose names start like gauges (nr_…) but grow.
_VMSTAT_NR_COUNTERS = frozenset(
    {"nr_dirtied", "nr_written", "nr_foll_pin_acquired", "nr_foll_pin_released"}
)
_CPU_GAUGES = frozenset({"procs_running", "procs_blocked"})


def clean_key(text: str) -> str:
    """A key usable in a metric name: ``Active(anon)`` → ``Active_anon``."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "_"


def parse(source: str, texts: dict[str, str]) -> dict[str, float]:
    """One sample of ``source`` from its files' texts (path → text; a missing file absent)."""
    if source == "vmstat":
        return _pairs(texts.get("/proc/vmstat", ""))
    if source == "meminfo":
        return _meminfo(texts.get("/proc/meminfo", ""))
    if source == "psi":
        return _psi(texts)
    if source == "cpu":
        return _stat(texts.get("/proc/stat", ""))
    if source == "net":
        return _net_dev(texts.get("/proc/net/dev", ""))
    raise ValueError(f"unknown monitor source {source!r}")


def is_counter(source: str, key: str) -> bool:
    """Whether ``key`` of ``source`` is a growing total (else a level)."""
    if source == "vmstat":
        return not key.startswith("nr_") or key in _VMSTAT_NR_COUNTERS
    if source == "meminfo":
        return False
    if source == "cpu":
        return key not in _CPU_GAUGES
    return True  # psi totals (µs stalled), net byte and packet counts


def _pairs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[clean_key(parts[0])] = float(parts[1])
            except ValueError:
                continue
    return out


def _meminfo(text: str) -> dict[str, float]:
    """``MemFree:  123 kB`` → ``{"MemFree_kib": 123}``; unitless lines keep their name."""
    return {
        clean_key(name) + ("_kib" if kb else ""): float(n)
        for name, (n, kb) in parse_meminfo(text).items()
    }


def _psi(texts: dict[str, str]) -> dict[str, float]:
    """``some avg10=… total=123`` of each resource → ``{"memory.some": 123 (µs), …}``."""
    out: dict[str, float] = {}
    for path, text in texts.items():
        if not path.startswith("/proc/pressure/"):
            continue
        resource = path.rsplit("/", 1)[1]
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            m = re.search(r"total=(\d+)", rest)
            if kind in ("some", "full") and m:
                out[f"{resource}.{kind}"] = float(m.group(1))
    return out


def _stat(text: str) -> dict[str, float]:
    """/proc/stat: ``cpu.user`` … (all CPUs), ``cpu3.idle`` … (ticks), ``ctxt``, ``intr``,
    ``forks`` (totals), ``procs_running``, ``procs_blocked`` (levels)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        head = parts[0]
        if head.startswith("cpu"):
            for name, value in zip(CPU_FIELDS, parts[1:]):
                out[f"{head}.{name}"] = float(value)
        elif head in ("ctxt", "intr", "processes", "procs_running", "procs_blocked"):
            out["forks" if head == "processes" else head] = float(parts[1])
    return out


def _net_dev(text: str) -> dict[str, float]:
    """/proc/net/dev: ``eth0.rx_bytes`` … per interface."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or "|" in line:
            continue
        cols = rest.split()
        if len(cols) < 16:
            continue
        iface = clean_key(name.strip())
        for field, k in NET_FIELDS.items():
            out[f"{iface}.{field}"] = float(cols[k])
    return out
