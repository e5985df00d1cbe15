"""The sections of a host's description read from its files and tools: CPU identity and
topology, caches, NUMA, memory, frequency scaling, virtualization.

Each returns its keys of `perflab.hosts.environment.Environment.info` (documented there),
``None`` for what cannot be read.
"""

from __future__ import annotations

from typing import Any

from perflab.hosts.base import TOOL_TIMEOUT, Reader, read_line, read_text
from perflab.hosts.proc_text import (
    cpu_list_or_none,
    format_cpu_list,
    human_cache_size,
    to_int,
)

_CPU = "/sys/devices/system/cpu"


def cpu_identity(cpuinfo: list[dict[str, str]], lscpu: dict[str, str]) -> dict[str, Any]:
    def first(*keys: str) -> str | None:
        for block in cpuinfo:
            for key in keys:
                if block.get(key):
                    return block[key]
        return None

    model = first("model name", "cpu model", "Model Name", "cpu") or lscpu.get("Model name")
    vendor = first("vendor_id", "vendor") or lscpu.get("Vendor ID")
    return {"cpu_model": model, "cpu_vendor": vendor}


def topology(host: Reader, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]) -> dict[str, Any]:
    """Sockets, cores, threads: /proc/cpuinfo ids, else sysfs topology, else lscpu."""
    online_text = read_line(host, f"{_CPU}/online")
    processors = [b for b in cpuinfo if "processor" in b and to_int(b["processor"]) is not None]
    online = cpu_list_or_none(online_text) or [int(b["processor"]) for b in processors] or None
    placement = _placement(host, processors, online)

    logical = len(online) if online else to_int(lscpu.get("CPU(s)"))
    sockets: int | None
    physical: int | None
    siblings: list[str] | None = None
    if placement:
        sockets, physical, siblings = _cores_of(placement)
    else:
        sockets = to_int(lscpu.get("Socket(s)"))
        per_socket = to_int(lscpu.get("Core(s) per socket"))
        physical = sockets * per_socket if sockets and per_socket else None
    threads = None
    if logical and physical:
        threads = max(1, logical // physical)
    elif lscpu.get("Thread(s) per core"):
        threads = to_int(lscpu.get("Thread(s) per core"))
    return {
        "sockets": sockets,
        "physical_cores": physical,
        "logical_cpus": logical,
        "threads_per_core": threads,
        "cpu_topology": _topology_summary(sockets, physical, threads, logical),
        "cpus_online": online_text or (format_cpu_list(online) if online else None),
        "smt_siblings": siblings,
    }


def _placement(
    host: Reader, processors: list[dict[str, str]], online: list[int] | None
) -> dict[int, tuple[str, str]]:
    """(package, core) per logical CPU: from /proc/cpuinfo, else sysfs; {} when unknown."""
    placement: dict[int, tuple[str, str]] = {}
    for b in processors:
        package = b.get("physical id", b.get("package"))
        core = b.get("core id", b.get("core"))
        if package is not None and core is not None:
            placement[int(b["processor"])] = (package, core)
    if online and len(placement) < len(online):
        placement = {}
        for cpu in online:
            package = read_line(host, f"{_CPU}/cpu{cpu}/topology/physical_package_id")
            core = read_line(host, f"{_CPU}/cpu{cpu}/topology/core_id")
            if package is None or core is None:
                return {}
            placement[cpu] = (package, core)
    return placement


def _cores_of(placement: dict[int, tuple[str, str]]) -> tuple[int, int, list[str]]:
    """(sockets, physical cores, CPU list of each core's SMT siblings) of a placement."""
    sockets = len({p for p, _ in placement.values()})
    cores: dict[tuple[str, str], list[int]] = {}
    for cpu, key in sorted(placement.items()):
        cores.setdefault(key, []).append(cpu)
    siblings = sorted(
        (format_cpu_list(c) for c in cores.values()), key=lambda s: cpu_list_or_none(s) or []
    )
    return sockets, len(cores), siblings


def _topology_summary(
    sockets: int | None, physical: int | None, threads: int | None, logical: int | None
) -> str | None:
    """``"1 socket x 2 cores x 1 thread = 2 CPUs"``, None when a count is unknown."""
    if not (sockets and physical and threads and logical):
        return None
    return (
        f"{sockets} socket{'s' if sockets != 1 else ''} x {physical // sockets} "
        f"core{'s' if physical // sockets != 1 else ''} x {threads} "
        f"thread{'s' if threads != 1 else ''} = {logical} CPU{'s' if logical != 1 else ''}"
    )


def caches(
    host: Reader, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> dict[str, str] | None:
    found: dict[str, str] = {}
    for index in range(16):
        base = f"{_CPU}/cpu0/cache/index{index}"
        level, kind, size = (
            read_line(host, f"{base}/level"),
            read_line(host, f"{base}/type"),
            read_line(host, f"{base}/size"),
        )
        if level is None:
            break
        if size is None:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind or "", "")
        found[f"L{level}{suffix}"] = human_cache_size(size)
    if found:
        return found
    for key in ("L1d cache", "L1i cache", "L2 cache", "L3 cache", "L4 cache"):
        if lscpu.get(key):
            found[key.split()[0]] = lscpu[key]
    if found:
        return found
    for block in cpuinfo:
        if block.get("cache size"):
            return {"cache size": block["cache size"]}
    return None


def numa_nodes(host: Reader, lscpu: dict[str, str]) -> int | None:
    nodes = cpu_list_or_none(read_line(host, "/sys/devices/system/node/online"))
    return len(nodes) if nodes else to_int(lscpu.get("NUMA node(s)"))


def memory(meminfo: dict[str, int]) -> dict[str, Any]:
    """The memory facts from /proc/meminfo in bytes (`hosts.proc_text.meminfo_bytes`)."""
    return {
        "memory_total_bytes": meminfo.get("MemTotal"),
        "memory_available_bytes": meminfo.get("MemAvailable"),
        "swap_total_bytes": meminfo.get("SwapTotal"),
        "hugepages_total": meminfo.get("HugePages_Total"),
        "hugepage_size_bytes": meminfo.get("Hugepagesize"),
    }


def frequency(host: Reader, online: list[int] | None) -> dict[str, Any]:
    governors: dict[str, list[int]] = {}
    for cpu in online or [0]:
        governor = read_line(host, f"{_CPU}/cpu{cpu}/cpufreq/scaling_governor")
        if governor is None:
            if cpu == (online or [0])[0]:
                break  # no cpufreq at all (VMs, containers): do not probe every CPU
            continue
        governors.setdefault(governor, []).append(cpu)

    def mhz(name: str) -> float | None:
        khz = to_int(read_line(host, f"{_CPU}/cpu0/cpufreq/{name}"))
        return khz / 1000.0 if khz is not None else None

    turbo = None
    no_turbo = to_int(read_line(host, f"{_CPU}/intel_pstate/no_turbo"))
    boost = to_int(read_line(host, f"{_CPU}/cpufreq/boost"))
    if no_turbo is not None:
        turbo = "off" if no_turbo else "on"
    elif boost is not None:
        turbo = "on" if boost else "off"
    active = to_int(read_line(host, f"{_CPU}/smt/active"))
    return {
        "cpufreq_driver": read_line(host, f"{_CPU}/cpu0/cpufreq/scaling_driver"),
        "cpu_governors": {g: format_cpu_list(c) for g, c in governors.items()} or None,
        "cpu_freq_min_mhz": mhz("cpuinfo_min_freq"),
        "cpu_freq_max_mhz": mhz("cpuinfo_max_freq"),
        "turbo": turbo,
        "smt_control": read_line(host, f"{_CPU}/smt/control"),
        "smt_active": bool(active) if active is not None else None,
    }


_HYPERVISOR_NAMES = (
    ("kvm", "kvm"),
    ("qemu", "qemu"),
    ("vmware", "vmware"),
    ("virtualbox", "oracle"),
    ("innotek", "oracle"),
    ("xen", "xen"),
    ("microsoft", "microsoft"),
    ("hyper-v", "microsoft"),
    ("amazon ec2", "amazon"),
    ("google", "google"),
    ("bochs", "bochs"),
    ("parallels", "parallels"),
)


def virtualization(
    host: Reader, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> dict[str, Any]:
    """systemd-detect-virt when present; else DMI names, the CPU's hypervisor flag, lscpu."""
    hypervisor = _detect_virt(host, "--vm")
    if hypervisor is None:
        hypervisor = _hypervisor_from_files(host, cpuinfo, lscpu)
    container = _detect_virt(host, "--container")
    if container is None:
        container = _container_from_files(host)

    parts = [h for h in (hypervisor,) if h and h != "none"]
    if container and container != "none":
        parts.append(f"container {container}")
    if parts:
        summary: str | None = ", ".join(parts)
    else:  # "none" only when the hypervisor check said so; an unknown stays unknown
        summary = "none" if hypervisor == "none" else None
    return {"hypervisor": hypervisor, "container": container, "virtualization": summary}


def _detect_virt(host: Reader, flag: str) -> str | None:
    """The first word systemd-detect-virt prints with ``flag``; None when it cannot run."""
    result = host.query(["systemd-detect-virt", flag], TOOL_TIMEOUT)
    if result is None:
        return None
    word = result.output.strip().splitlines()[0].strip() if result.output.strip() else ""
    return word or None


def _hypervisor_from_files(
    host: Reader, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> str | None:
    """DMI vendor and product, lscpu, /sys/hypervisor, then the CPU's hypervisor flag."""
    dmi = " ".join(
        filter(
            None,
            (
                read_line(host, "/sys/class/dmi/id/sys_vendor"),
                read_line(host, "/sys/class/dmi/id/product_name"),
            ),
        )
    ).lower()
    hypervisor = next((name for needle, name in _HYPERVISOR_NAMES if needle in dmi), None)
    if hypervisor is None and lscpu.get("Hypervisor vendor"):
        hypervisor = lscpu["Hypervisor vendor"].lower()
    if hypervisor is None:
        xen = read_line(host, "/sys/hypervisor/type")
        flags = next((b["flags"].split() for b in cpuinfo if "flags" in b), None)
        if xen:
            hypervisor = xen
        elif flags is not None:
            hypervisor = "unknown hypervisor" if "hypervisor" in flags else "none"
    return hypervisor


def _container_from_files(host: Reader) -> str | None:
    """Docker's and Podman's marker files, else the names in PID 1's cgroup."""
    if host.read_file("/.dockerenv") is not None:
        return "docker"
    if host.read_file("/run/.containerenv") is not None:
        return "podman"
    cgroup = read_text(host, "/proc/1/cgroup") or ""
    return next((c for c in ("docker", "lxc", "kubepods", "containerd") if c in cgroup), None)
