"""Environment for display: ordered label/value rows, and what differs between two hosts.

Works on the ``info`` dict that `perflab.hosts.environment.capture` produced (as stored:
plain JSON values), so an environment read back from the store displays the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: Info keys that change between two captures of an unchanged machine.
VOLATILE_KEYS = frozenset({"captured_at", "memory_available_bytes", "loadavg"})
#: Info keys about the capture, not the machine: the reasons behind its unknowns.
_ABOUT_CAPTURE = frozenset({"unread_why"})

UNKNOWN = "unknown"


def _bytes(n: Any) -> str:
    if not isinstance(n, (int, float)):
        return UNKNOWN
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _memory(info: Mapping[str, Any]) -> str:
    total = info.get("memory_total_bytes")
    if total is None:
        return UNKNOWN
    text = f"{_bytes(total)} total"
    if info.get("memory_available_bytes") is not None:
        text += f", {_bytes(info['memory_available_bytes'])} available at capture"
    return text


def _swap(info: Mapping[str, Any]) -> str:
    devices = info.get("swap_devices")
    if devices is None:
        return UNKNOWN
    if not devices:
        return "none"
    return "; ".join(
        f"{d.get('name')} ({d.get('type')}, {_bytes(d.get('size_bytes'))}, "
        f"priority {d.get('priority')})"
        for d in devices
    )


def _caches(info: Mapping[str, Any]) -> str:
    caches = info.get("caches")
    if not caches:
        return UNKNOWN
    return ", ".join(f"{level} {size}" for level, size in caches.items())


def _governors(info: Mapping[str, Any]) -> str:
    governors = info.get("cpu_governors")
    if not governors:
        return "not exposed (no cpufreq)" if "cpu_governors" in info else UNKNOWN
    if len(governors) == 1:
        return f"{next(iter(governors))} (CPUs {next(iter(governors.values()))})"
    return ", ".join(f"{g} (CPUs {cpus})" for g, cpus in governors.items())


def _frequency(info: Mapping[str, Any]) -> str:
    lo, hi = info.get("cpu_freq_min_mhz"), info.get("cpu_freq_max_mhz")
    if lo is None and hi is None:
        return UNKNOWN
    parts = [
        f"{lo:.0f}-{hi:.0f} MHz"
        if lo is not None and hi is not None
        else f"{(hi if hi is not None else lo):.0f} MHz"
    ]
    if info.get("cpufreq_driver"):
        parts.append(f"driver {info['cpufreq_driver']}")
    if info.get("turbo"):
        parts.append(f"turbo {info['turbo']}")
    return ", ".join(parts)


def _smt(info: Mapping[str, Any]) -> str:
    control, active = info.get("smt_control"), info.get("smt_active")
    if control is None and active is None:
        return UNKNOWN
    text = control or UNKNOWN
    if active is not None:
        text += ", active" if active else ", inactive"
    return text


def _value(key: str, unit: str = "", missing: str = UNKNOWN) -> Callable[[Mapping[str, Any]], str]:
    def show(info: Mapping[str, Any]) -> str:
        value = info.get(key)
        if value is None or value == "":
            return missing
        if isinstance(value, list):
            return ", ".join(str(v) for v in value) or "none"
        return f"{value}{unit}"

    return show


#: (label, how to show it, the info key whose ``unread_why`` explains its unknown) in
#: display order.
_ROWS: list[tuple[str, Callable[[Mapping[str, Any]], str], str | None]] = [
    ("Host", _value("hostname"), None),
    ("Captured", _value("captured_at"), None),
    ("CPU", _value("cpu_model"), "cpu_model"),
    (
        "Vendor / arch",
        lambda i: " / ".join(str(i.get(k) or UNKNOWN) for k in ("cpu_vendor", "architecture")),
        "cpu_vendor",
    ),
    ("Topology", _value("cpu_topology"), None),
    ("Online CPUs", _value("cpus_online"), None),
    ("SMT siblings", _value("smt_siblings"), None),
    ("Caches (per instance)", _caches, None),
    ("NUMA nodes", _value("numa_nodes"), "numa_nodes"),
    ("Memory", _memory, "memory_total_bytes"),
    ("Swap", _swap, "swap_devices"),
    (
        "Huge pages",
        lambda i: (
            UNKNOWN
            if i.get("hugepages_total") is None
            else f"{i['hugepages_total']} of {_bytes(i.get('hugepage_size_bytes'))}"
        ),
        "hugepages_total",
    ),
    (
        "Transparent huge pages",
        lambda i: (
            UNKNOWN
            if not i.get("transparent_hugepages")
            else f"{i['transparent_hugepages']} (defrag {i.get('thp_defrag') or UNKNOWN})"
        ),
        "transparent_hugepages",
    ),
    ("Kernel", _value("kernel"), None),
    ("OS", _value("os"), "os"),
    ("Boot command line", _value("boot_cmdline"), None),
    ("CPU governor", _governors, None),
    ("CPU frequency", _frequency, "cpu_freq_max_mhz"),
    ("SMT", _smt, "smt_control"),
    ("Clock source", _value("clocksource"), "clocksource"),
    ("ASLR (randomize_va_space)", _value("aslr"), "aslr"),
    ("NUMA balancing", _value("numa_balancing"), "numa_balancing"),
    ("Swappiness", _value("swappiness"), "swappiness"),
    ("Multi-gen LRU", _value("mglru"), "mglru"),
    ("Virtualization", _value("virtualization"), "virtualization"),
    ("Load average (1/5/15 min)", _value("loadavg"), "loadavg"),
    # the controller's alone: "–" on a host perflab only drives
    ("Python", _value("python_version", missing="–"), None),
    ("perflab", _value("perflab_version", missing="–"), None),
]


def _why(shown: str, key: str | None, info: Mapping[str, Any]) -> str:
    """``shown``, and when it is unknown (in part) what the host lacks, as its capture said."""
    reason = (info.get("unread_why") or {}).get(key) if key else None
    return f"{shown}: {reason}" if UNKNOWN in shown and isinstance(reason, str) else shown


def environment_rows(info: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) pairs in display order; ``unknown`` where the capture could not tell.

    A host lent by a labgrid place has its place second, after the host's name. Tool
    versions follow as ``("memcached", "memcached 1.6.18")`` rows, ``not found``
    for a tool that could not be run.
    """
    rows = [(label, _why(show(info), key, info)) for label, show, key in _ROWS]
    place = info.get("labgrid")
    if isinstance(place, Mapping):  # a host lent by a labgrid place: which, whose, from where
        said = (
            f"{place.get('place')} (coordinator {place.get('coordinator')}, "
            f"acquired by {place.get('acquired_by')})"
        )
        rows.insert(1, ("labgrid place", said))
    for tool, version in (info.get("tools") or {}).items():
        rows.append((tool, version if version else "not found"))
    return rows


def _flatten(info: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts become dotted keys (``tools.memcached``, ``caches.L2``); lists stay values."""
    flat: dict[str, Any] = {}
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):  # an empty mapping adds nothing, like a missing key
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def diff_environments(
    a: Mapping[str, Any], b: Mapping[str, Any], *, include_volatile: bool = False
) -> list[tuple[str, Any, Any]]:
    """(key, value in a, value in b) for every key whose values differ.

    Nested dicts are compared key by key (``tools.memcached``); a key missing on one
    side shows as None there. Keys in `VOLATILE_KEYS` (time of capture, free memory,
    load) are left out unless ``include_volatile``. Order: ``a``'s keys, then ``b``'s new ones.
    """
    flat_a, flat_b = _flatten(a), _flatten(b)
    keys = list(dict.fromkeys([*flat_a, *flat_b]))
    out = []
    for key in keys:
        if key.split(".")[0] in _ABOUT_CAPTURE:
            continue
        if not include_volatile and key.split(".")[0] in VOLATILE_KEYS:
            continue
        va, vb = flat_a.get(key), flat_b.get(key)
        if va != vb:
            out.append((key, va, vb))
    return out
