"""What machine a run happened on: captured once per experiment and host.

Everything is read through a `perflab.hosts.base.Reader` (read a file, run a short command),
so the same code captures this machine and a remote one (`perflab.hosts.remote.RemoteHost`).
Nothing here raises for a missing file, a tool that is not installed or a command that
hangs: what cannot be read is recorded as unknown (``None``), named in ``unread``, and
the capture goes on. A host is described by what it says itself, never by this
machine's facts: the Python and perflab that run the experiment are the controller's,
recorded only in the controller's own description (``controller=True``). A Linux host
is read from /proc and /sys (a busybox device: no lscpu, no Python); another (NetBSD,
FreeBSD, macOS) from ``uname -a`` and ``sysctl``. The texts are parsed in proc_text.py,
the hardware and kernel sections read in facts.py, tool versions asked in
tool_versions.py; this module puts them together.

`Environment.info` is a flat, JSON-serialisable dict; its keys (``None`` = unknown):

====================== ===================================================================
key                    meaning
====================== ===================================================================
schema                 version of this layout (int)
captured_at            UTC time of the capture, ISO 8601
hostname               host name (/proc/sys/kernel/hostname, else ``uname -n``, else
                       sysctl ``kern.hostname``)
architecture           machine hardware name (``uname -m``, else lscpu, else sysctl
                       ``hw.machine_arch``/``hw.machine``)
cpu_vendor             vendor_id of /proc/cpuinfo, else lscpu ``Vendor ID``
cpu_model              model name (x86 ``model name``, MIPS ``cpu model``, POWER ``cpu``,
                       else lscpu ``Model name``, else sysctl ``machdep.cpu_brand``,
                       ``machdep.cpu.brand_string`` or ``hw.model``)
sockets                physical packages (int)
physical_cores         cores over all sockets (int)
logical_cpus           online logical CPUs (int; sysctl ``hw.ncpuonline``/``hw.ncpu``
                       where there is no /proc)
threads_per_core       logical_cpus / physical_cores (int)
cpu_topology           summary: ``"1 socket x 2 cores x 1 thread = 2 CPUs"``
cpus_online            online CPU list as the kernel prints it (``"0-3,8"``)
smt_siblings           CPU lists sharing one core (``["0,4", "1,5", ...]``)
caches                 {``"L1d"``: ``"32 KiB"``, ...}: one instance's size (cpu0, sysfs),
                       else lscpu's text
numa_nodes             NUMA node count (int)
memory_total_bytes     MemTotal (int, bytes; sysctl ``hw.physmem64``/``hw.memsize``/
                       ``hw.physmem`` where there is no /proc)
memory_available_bytes MemAvailable at capture (int, bytes; volatile)
swap_total_bytes       SwapTotal (int, bytes)
swap_devices           /proc/swaps rows: [{name, type, size_bytes, used_bytes, priority}]
hugepages_total        HugePages_Total (int)
hugepage_size_bytes    Hugepagesize (int, bytes)
transparent_hugepages  THP mode in use (``"always"``, ``"madvise"``, ``"never"``)
thp_defrag             THP defrag mode in use
kernel                 ``uname -a`` (else /proc/version)
kernel_release         /proc/sys/kernel/osrelease, else ``uname -a``'s release, else
                       sysctl ``kern.osrelease``
os                     PRETTY_NAME of /etc/os-release (or OpenWrt's DISTRIB_DESCRIPTION);
                       elsewhere than Linux the kernel's name and release (``NetBSD 10.0``)
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
python_version         Python running perflab (the controller's record only)
perflab_version        perflab's version (the controller's record only)
tools                  {tool as named: first line of its version output, or None}
unread                 the keys above this capture could not read (``None``), sorted
unread_why             {key: where it is read from, which this host lacks} for those of
                       `UNREAD_WHY` (a router's kernel without THP, NUMA or cpufreq)
====================== ===================================================================

`Environment.artifacts` keeps the raw sources by name: ``/proc/cpuinfo``,
``/proc/meminfo``, ``/etc/os-release``, ``/proc/cmdline``, ``/proc/swaps``,
``uname -a``, ``lscpu``, ``/proc/version``, ``sysctl`` (when present).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from perflab import _version
from perflab.hosts import facts
from perflab.hosts.base import TOOL_TIMEOUT, Reader, command_output, read_line, read_text
from perflab.hosts.proc_text import (
    bracketed,
    cpu_list_or_none,
    meminfo_bytes,
    parse_cpuinfo,
    parse_key_values,
    parse_loadavg,
    parse_os_release,
    parse_swaps,
    to_int,
)
from perflab.hosts.tool_versions import tool_version

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

#: Where each fact is read on a Linux host: with an unknown, what the host lacks.
_NODE, _THP = "/sys/devices/system/node", "/sys/kernel/mm/transparent_hugepage"
_CPUFREQ = "/sys/devices/system/cpu/cpu0/cpufreq (no frequency driver, or a VM)"
UNREAD_WHY = {
    "cpu_vendor": "no vendor_id in /proc/cpuinfo (not x86) and no lscpu",
    "cpu_model": "no model line in /proc/cpuinfo and no lscpu",
    "numa_nodes": f"no {_NODE} (a kernel without NUMA) and no lscpu",
    "memory_total_bytes": "no MemTotal in /proc/meminfo",
    "swap_devices": "no /proc/swaps",
    "hugepages_total": "no HugePages_Total in /proc/meminfo (a kernel without huge pages)",
    "hugepage_size_bytes": "no Hugepagesize in /proc/meminfo (a kernel without huge pages)",
    "transparent_hugepages": f"no {_THP} (a kernel without THP)",
    "thp_defrag": f"no {_THP} (a kernel without THP)",
    "os": "no /etc/os-release, /usr/lib/os-release or /etc/openwrt_release",
    "cpufreq_driver": f"no {_CPUFREQ}",
    "cpu_governors": f"no {_CPUFREQ}",
    "cpu_freq_min_mhz": f"no {_CPUFREQ}",
    "cpu_freq_max_mhz": f"no {_CPUFREQ}",
    "turbo": "no intel_pstate/no_turbo or cpufreq/boost in /sys",
    "smt_control": "no /sys/devices/system/cpu/smt (a kernel without SMT control)",
    "smt_active": "no /sys/devices/system/cpu/smt (a kernel without SMT control)",
    "clocksource": "no /sys/devices/system/clocksource",
    "aslr": "no /proc/sys/kernel/randomize_va_space",
    "numa_balancing": "no /proc/sys/kernel/numa_balancing (a kernel without NUMA)",
    "swappiness": "no /proc/sys/vm/swappiness",
    "mglru": "no /sys/kernel/mm/lru_gen (a kernel without the multi-gen LRU)",
    "hypervisor": "no systemd-detect-virt, DMI names or hypervisor flag",
    "virtualization": "no systemd-detect-virt, DMI names or hypervisor flag",
    "loadavg": "no /proc/loadavg",
}

#: Where the OS names itself, in order of preference.
_OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release", "/etc/openwrt_release")


def capture(
    host: Reader,
    tools: Sequence[str] = (),
    *,
    timeout: float = TOOL_TIMEOUT,
    controller: bool = False,
) -> Environment:
    """Describe ``host`` and the versions of ``tools``; never raises for what it cannot read.

    controller: ``host`` is the machine perflab runs on; its description then also
    records the Python and perflab running the experiment (facts of no other host)."""
    artifacts = _read_artifacts(host, timeout)

    def artifact(name: str) -> str:
        return artifacts.get(name, b"").decode("utf-8", errors="replace")

    cpuinfo = parse_cpuinfo(artifact("/proc/cpuinfo"))
    lscpu = parse_key_values(artifact("lscpu"))
    meminfo = meminfo_bytes(artifact("/proc/meminfo"))
    release = next(
        (parse_os_release(artifact(name)) for name in _OS_RELEASE_FILES if name in artifacts), {}
    )
    uname = _uname_words(artifact("uname -a"))
    sysctl = parse_sysctl(artifact("sysctl"), SYSCTL_NAMES)

    info: dict[str, Any] = {
        "schema": SCHEMA,
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    info.update(_identity(host, lscpu, sysctl, timeout))
    info.update(facts.cpu_identity(cpuinfo, lscpu))
    if info["cpu_model"] is None:
        info["cpu_model"] = _first(
            sysctl, "machdep.cpu_brand", "machdep.cpu.brand_string", "hw.model"
        )
    topology = facts.topology(host, cpuinfo, lscpu)
    if topology["logical_cpus"] is None:
        topology["logical_cpus"] = to_int(_first(sysctl, "hw.ncpuonline", "hw.ncpu"))
    info.update(topology)
    info["caches"] = facts.caches(host, cpuinfo, lscpu)
    info["numa_nodes"] = facts.numa_nodes(host, lscpu)
    info.update(facts.memory(meminfo))
    if info["memory_total_bytes"] is None:
        info["memory_total_bytes"] = to_int(
            _first(sysctl, "hw.physmem64", "hw.memsize", "hw.physmem")
        )
    info["swap_devices"] = (
        parse_swaps(artifact("/proc/swaps")) if "/proc/swaps" in artifacts else None
    )
    thp = "/sys/kernel/mm/transparent_hugepage"
    info["transparent_hugepages"] = bracketed(read_text(host, f"{thp}/enabled"))
    info["thp_defrag"] = bracketed(read_text(host, f"{thp}/defrag"))
    info["kernel"] = (
        artifact("uname -a").strip() or artifact("/proc/version").strip().split("\n")[0] or None
    )
    info["kernel_release"] = (
        read_line(host, "/proc/sys/kernel/osrelease")
        or (uname[2] if len(uname) > 2 else None)
        or sysctl.get("kern.osrelease")
    )
    info["os"] = (
        release.get("PRETTY_NAME")
        or release.get("DISTRIB_DESCRIPTION")
        or release.get("NAME")
        or _other_os(uname, sysctl, info["kernel_release"])
    )
    info["boot_cmdline"] = artifact("/proc/cmdline").strip() or None
    info.update(facts.frequency(host, cpu_list_or_none(topology["cpus_online"])))
    info.update(_kernel_settings(host))
    info.update(facts.virtualization(host, cpuinfo, lscpu))
    info["loadavg"] = _loadavg(host)
    if controller:
        info["python_version"] = platform.python_version()
        info["perflab_version"] = _version.__version__
    info["tools"] = {tool: tool_version(host, tool, timeout) for tool in dict.fromkeys(tools)}
    info["unread"] = sorted(k for k, v in info.items() if v is None)
    info["unread_why"] = {k: UNREAD_WHY[k] for k in info["unread"] if k in UNREAD_WHY}
    return Environment(info=info, artifacts=artifacts)


def _read_artifacts(host: Reader, timeout: float) -> dict[str, bytes]:
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
    if "uname -a" not in artifacts and (data := host.read_file("/proc/version")) is not None:
        artifacts["/proc/version"] = data  # a Linux host that cannot run uname (no timeout)
    kernel_name = _uname_words(artifacts.get("uname -a", b"").decode("utf-8", "replace"))[:1]
    linux = kernel_name == ["Linux"] or (not kernel_name and "/proc/meminfo" in artifacts)
    if not linux:  # NetBSD, FreeBSD, macOS: no /proc; sysctl says what it tells
        result = host.query(["sysctl", *SYSCTL_NAMES], timeout)
        if result is not None and parse_sysctl(result.output, SYSCTL_NAMES):
            artifacts["sysctl"] = result.output.encode()
    return artifacts


#: What sysctl is asked on a host that is not Linux (NetBSD, FreeBSD, macOS names; a name
#: a system does not know is an error line in the answer, the others are still answered).
SYSCTL_NAMES = (
    "kern.hostname",
    "kern.ostype",
    "kern.osrelease",
    "hw.machine_arch",
    "hw.machine",
    "machdep.cpu_brand",
    "machdep.cpu.brand_string",
    "hw.model",
    "hw.ncpuonline",
    "hw.ncpu",
    "hw.physmem64",
    "hw.memsize",
    "hw.physmem",
)


def parse_sysctl(text: str, names: Sequence[str]) -> dict[str, str]:
    """``name = value`` (NetBSD, OpenBSD) or ``name: value`` (FreeBSD, macOS) lines of the
    asked ``names``; error lines and other names are left out."""
    wanted = set(names)
    out: dict[str, str] = {}
    for line in text.splitlines():
        for sep in (" = ", ": ", "="):
            name, found, value = line.partition(sep)
            if found and name.strip() in wanted:
                if value.strip():
                    out.setdefault(name.strip(), value.strip())
                break
    return out


def _first(values: dict[str, str], *names: str) -> str | None:
    return next((values[n] for n in names if values.get(n)), None)


def _uname_words(text: str) -> list[str]:
    """``uname -a``'s words: kernel name, node name, release first (POSIX's order)."""
    lines = text.strip().splitlines()
    return lines[0].split() if lines else []


def _other_os(uname: list[str], sysctl: dict[str, str], release: str | None) -> str | None:
    """A system without os-release (not Linux): its kernel's name and release."""
    name = sysctl.get("kern.ostype") or (uname[0] if uname else None)
    if name is None or name == "Linux":
        return None
    return f"{name} {release}" if release else name


def _identity(
    host: Reader, lscpu: dict[str, str], sysctl: dict[str, str], timeout: float
) -> dict[str, Any]:
    """``hostname`` and ``architecture``."""
    uname_m = command_output(host, ["uname", "-m"], timeout)
    hostname = read_line(host, "/proc/sys/kernel/hostname")
    if hostname is None and (out := command_output(host, ["uname", "-n"], timeout)):
        hostname = out.strip() or None
    architecture = (uname_m.strip() or None) if uname_m else lscpu.get("Architecture")
    return {
        "hostname": hostname or sysctl.get("kern.hostname"),
        "architecture": architecture or _first(sysctl, "hw.machine_arch", "hw.machine"),
    }


def _kernel_settings(host: Reader) -> dict[str, Any]:
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


def _loadavg(host: Reader) -> list[float] | None:
    """The 1, 5 and 15 minute load averages of /proc/loadavg."""
    found = parse_loadavg(read_line(host, "/proc/loadavg"))
    return list(found) if found else None
