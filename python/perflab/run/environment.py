"""What machine a run happened on: captured once per experiment and host.

Everything is read through `HostAccess` (read a file, run a command; host_access.py),
so the same code captures a remote host once an SSH implementation exists. Nothing here
raises for a missing file, a tool that is not installed or a command that hangs: what
cannot be read is recorded as unknown (``None``) and the capture goes on. The texts are
parsed in host_text.py, the hardware and kernel sections read in host_facts.py, tool
versions asked in tool_versions.py; this module puts them together.

`Environment.info` is a flat, JSON-serialisable dict; its keys (``None`` = unknown):

====================== ===================================================================
key                    meaning
====================== ===================================================================
schema                 version of this layout (int)
captured_at            UTC time of the capture, ISO 8601
hostname               host name (/proc/sys/kernel/hostname, else ``uname -n``)
architecture           machine hardware name (``uname -m``)
cpu_vendor             vendor_id of /proc/cpuinfo, else lscpu ``Vendor ID``
cpu_model              model name (x86 ``model name``, MIPS ``cpu model``, POWER ``cpu``,
                       else lscpu ``Model name``)
sockets                physical packages (int)
physical_cores         cores over all sockets (int)
logical_cpus           online logical CPUs (int)
threads_per_core       logical_cpus / physical_cores (int)
cpu_topology           summary: ``"1 socket x 2 cores x 1 thread = 2 CPUs"``
cpus_online            online CPU list as the kernel prints it (``"0-3,8"``)
smt_siblings           CPU lists sharing one core (``["0,4", "1,5", ...]``)
caches                 {``"L1d"``: ``"32 KiB"``, ...}: one instance's size (cpu0, sysfs),
                       else lscpu's text
numa_nodes             NUMA node count (int)
memory_total_bytes     MemTotal (int, bytes)
memory_available_bytes MemAvailable at capture (int, bytes; volatile)
swap_total_bytes       SwapTotal (int, bytes)
swap_devices           /proc/swaps rows: [{name, type, size_bytes, used_bytes, priority}]
hugepages_total        HugePages_Total (int)
hugepage_size_bytes    Hugepagesize (int, bytes)
transparent_hugepages  THP mode in use (``"always"``, ``"madvise"``, ``"never"``)
thp_defrag             THP defrag mode in use
kernel                 ``uname -a``
kernel_release         ``uname -r`` (/proc/sys/kernel/osrelease)
os                     PRETTY_NAME of /etc/os-release (or OpenWrt's DISTRIB_DESCRIPTION)
boot_cmdline           /proc/cmdline
cpufreq_driver         scaling_driver of cpu0
cpu_governors          {governor: CPU list}, e.g. ``{"performance": "0-7"}``
cpu_freq_min_mhz       cpuinfo_min_freq of cpu0 (float, MHz)
cpu_freq_max_mhz       cpuinfo_max_freq of cpu0 (float, MHz)
turbo                  ``"on"``/``"off"`` (intel_pstate/no_turbo or cpufreq/boost)
smt_control            /sys/devices/system/cpu/smt/control (``on``, ``off``, ``notsupported``...)
smt_active             /sys/devices/system/cpu/smt/active (bool)
clocksource            current clocksource (``tsc``, ``hpet``...)
aslr                   kernel.randomize_va_space (int)
numa_balancing         kernel.numa_balancing (int)
swappiness             vm.swappiness (int)
mglru                  /sys/kernel/mm/lru_gen/enabled (multi-gen LRU feature mask)
hypervisor             ``"kvm"``, ``"vmware"``, ... , ``"none"`` on bare metal
container              ``"docker"``, ``"podman"``, ``"lxc"``... , ``"none"``
virtualization         summary of the two: ``"kvm, container docker"``, ``"none"``
loadavg                /proc/loadavg's 1, 5, 15 minute load averages (volatile)
python_version         Python running perflab (the controller)
perflab_version        perflab's version (the controller)
tools                  {tool as named: first line of its version output, or None}
====================== ===================================================================

`Environment.artifacts` keeps the raw sources by name: ``/proc/cpuinfo``,
``/proc/meminfo``, ``/etc/os-release``, ``/proc/cmdline``, ``/proc/swaps``,
``uname -a``, ``lscpu`` (when present).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from perflab import _version
from perflab.run import host_facts
from perflab.run.host_access import TOOL_TIMEOUT, HostAccess, command_output, read_line, read_text
from perflab.run.host_text import (
    bracketed,
    parse_cpu_list,
    parse_cpuinfo,
    parse_key_values,
    parse_os_release,
    parse_swaps,
    to_int,
)
from perflab.run.tool_versions import tool_version

SCHEMA = 1


@dataclass(frozen=True)
class Environment:
    """One host's description (`info`, documented above) and its raw sources (`artifacts`)."""

    info: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, bytes] = field(default_factory=dict)


_FILE_ARTIFACTS = (
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/etc/os-release",
    "/proc/cmdline",
    "/proc/swaps",
)

#: Where the OS names itself, in order of preference.
_OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release", "/etc/openwrt_release")


def capture(
    host: HostAccess, tools: Sequence[str] = (), *, timeout: float = TOOL_TIMEOUT
) -> Environment:
    """Describe ``host`` and the versions of ``tools``; never raises for what it cannot read."""
    artifacts = _read_artifacts(host, timeout)

    def artifact(name: str) -> str:
        return artifacts.get(name, b"").decode("utf-8", errors="replace")

    cpuinfo = parse_cpuinfo(artifact("/proc/cpuinfo"))
    lscpu = parse_key_values(artifact("lscpu"))
    meminfo = parse_key_values(artifact("/proc/meminfo"))
    release = next(
        (parse_os_release(artifact(name)) for name in _OS_RELEASE_FILES if name in artifacts), {}
    )

    info: dict[str, Any] = {
        "schema": SCHEMA,
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    info.update(_identity(host, lscpu, timeout))
    info.update(host_facts.cpu_identity(cpuinfo, lscpu))
    topology = host_facts.topology(host, cpuinfo, lscpu)
    info.update(topology)
    info["caches"] = host_facts.caches(host, cpuinfo, lscpu)
    info["numa_nodes"] = host_facts.numa_nodes(host, lscpu)
    info.update(host_facts.memory(meminfo))
    info["swap_devices"] = (
        parse_swaps(artifact("/proc/swaps")) if "/proc/swaps" in artifacts else None
    )
    thp = "/sys/kernel/mm/transparent_hugepage"
    info["transparent_hugepages"] = bracketed(read_text(host, f"{thp}/enabled"))
    info["thp_defrag"] = bracketed(read_text(host, f"{thp}/defrag"))
    info["kernel"] = artifact("uname -a").strip() or None
    info["kernel_release"] = read_line(host, "/proc/sys/kernel/osrelease")
    info["os"] = (
        release.get("PRETTY_NAME") or release.get("DISTRIB_DESCRIPTION") or release.get("NAME")
    )
    info["boot_cmdline"] = artifact("/proc/cmdline").strip() or None
    info.update(host_facts.frequency(host, parse_cpu_list(topology["cpus_online"])))
    info.update(_kernel_settings(host))
    info.update(host_facts.virtualization(host, cpuinfo, lscpu))
    info["loadavg"] = _loadavg(host)
    info["python_version"] = platform.python_version()
    info["perflab_version"] = _version.__version__
    info["tools"] = {tool: tool_version(host, tool, timeout) for tool in dict.fromkeys(tools)}
    return Environment(info=info, artifacts=artifacts)


def _read_artifacts(host: HostAccess, timeout: float) -> dict[str, bytes]:
    """The raw sources kept with the description (see `Environment.artifacts`)."""
    artifacts: dict[str, bytes] = {}
    for path in _FILE_ARTIFACTS:
        data = host.read_file(path)
        if data is not None:
            artifacts[path] = data
    if "/etc/os-release" not in artifacts:
        for path in _OS_RELEASE_FILES[1:]:
            if (data := host.read_file(path)) is not None:
                artifacts[path] = data
                break
    for name, argv in (("uname -a", ["uname", "-a"]), ("lscpu", ["lscpu"])):
        if (out := command_output(host, argv, timeout)) is not None:
            artifacts[name] = out.encode()
    return artifacts


def _identity(host: HostAccess, lscpu: dict[str, str], timeout: float) -> dict[str, Any]:
    """``hostname`` and ``architecture``."""
    uname_m = command_output(host, ["uname", "-m"], timeout)
    hostname = read_line(host, "/proc/sys/kernel/hostname")
    if hostname is None and (out := command_output(host, ["uname", "-n"], timeout)):
        hostname = out.strip() or None
    return {
        "hostname": hostname,
        "architecture": (uname_m.strip() or None) if uname_m else lscpu.get("Architecture"),
    }


def _kernel_settings(host: HostAccess) -> dict[str, Any]:
    """Clock source and the sysctls that change how a benchmark behaves."""
    return {
        "clocksource": read_line(
            host, "/sys/devices/system/clocksource/clocksource0/current_clocksource"
        ),
        "aslr": to_int(read_line(host, "/proc/sys/kernel/randomize_va_space")),
        "numa_balancing": to_int(read_line(host, "/proc/sys/kernel/numa_balancing")),
        "swappiness": to_int(read_line(host, "/proc/sys/vm/swappiness")),
        "mglru": read_line(host, "/sys/kernel/mm/lru_gen/enabled"),
    }


def _loadavg(host: HostAccess) -> list[float] | None:
    """The 1, 5 and 15 minute load averages of /proc/loadavg."""
    loadavg = (read_line(host, "/proc/loadavg") or "").split()[:3]
    try:
        return [float(x) for x in loadavg] if len(loadavg) == 3 else None
    except ValueError:
        return None
