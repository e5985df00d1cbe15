"""What machine a run happened on: captured once per experiment and host.

Everything is read through `HostAccess` (read a file, run a command), so the same
code captures a remote host once an SSH implementation exists. Nothing here raises
for a missing file, a tool that is not installed or a command that hangs: what
cannot be read is recorded as unknown (``None``) and the capture goes on.

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

import os
import platform
import re
import shlex
import signal
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

import perflab

SCHEMA = 1

#: Seconds a version or probe command may take before it is abandoned.
TOOL_TIMEOUT = 5.0

_CPU = "/sys/devices/system/cpu"


@runtime_checkable
class HostAccess(Protocol):
    """The two things capture needs from a host; each returns None instead of raising."""

    def read_file(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or unreadable."""

    def run(self, argv: list[str], timeout: float) -> tuple[int, str] | None:
        """(exit code, stdout and stderr merged), or None when it could not run or timed out."""


class LocalHost:
    """`HostAccess` for the machine perflab runs on."""

    name = "localhost"

    def read_file(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except (OSError, ValueError):
            return None

    def run(self, argv: list[str], timeout: float) -> tuple[int, str] | None:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}  # version and lscpu texts in English
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except (OSError, ValueError):
            return None
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out = None
        # A version probe leaves nothing behind: its own group goes, and nothing else.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if out is None:
            proc.communicate()
            return None
        return proc.returncode, out.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Environment:
    """One host's description (`info`, documented above) and its raw sources (`artifacts`)."""

    info: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, bytes] = field(default_factory=dict)


# --- small readers ----------------------------------------------------------------------


def _text(host: HostAccess, path: str) -> str | None:
    data = host.read_file(path)
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")


def _line(host: HostAccess, path: str) -> str | None:
    text = _text(host, path)
    if text is None:
        return None
    text = text.strip()
    return text or None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _output(host: HostAccess, argv: list[str], timeout: float = TOOL_TIMEOUT) -> str | None:
    result = host.run(argv, timeout)
    if result is None or result[0] != 0:
        return None
    return result[1]


def parse_cpu_list(text: str | None) -> list[int] | None:
    """The kernel's CPU list format: ``"0-3,8,10-11"`` → [0, 1, 2, 3, 8, 10, 11]."""
    if text is None or not text.strip():
        return None
    cpus: list[int] = []
    try:
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return None
    return cpus


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


def _meminfo_bytes(meminfo: dict[str, str], key: str) -> int | None:
    value = meminfo.get(key)
    if value is None:
        return None
    number, _, unit = value.partition(" ")
    scale = {"": 1, "kB": 1024, "KB": 1024, "mB": 1024**2, "MB": 1024**2}.get(unit.strip())
    n = _int(number)
    return n * scale if n is not None and scale is not None else None


def parse_swaps(text: str) -> list[dict[str, Any]]:
    """/proc/swaps rows (sizes in KiB there) as dicts with sizes in bytes."""
    rows = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        name, kind, size, used, priority = fields[:5]
        rows.append(
            {
                "name": name,
                "type": kind,
                "size_bytes": _int(size) * 1024 if _int(size) is not None else None,
                "used_bytes": _int(used) * 1024 if _int(used) is not None else None,
                "priority": _int(priority),
            }
        )
    return rows


def _bracketed(text: str | None) -> str | None:
    """THP files mark the active choice: ``always [madvise] never`` → ``madvise``."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text.strip() or None)


def _human_cache_size(raw: str) -> str:
    """sysfs ``32K`` / ``32768K`` → ``32 KiB`` / ``32 MiB``."""
    match = re.fullmatch(r"(\d+)\s*([KMG]?)B?", raw.strip())
    if not match:
        return raw.strip()
    size = int(match.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match.group(2)]
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


# --- sections ---------------------------------------------------------------------------


def _cpu_identity(cpuinfo: list[dict[str, str]], lscpu: dict[str, str]) -> dict[str, Any]:
    def first(*keys: str) -> str | None:
        for block in cpuinfo:
            for key in keys:
                if block.get(key):
                    return block[key]
        return None

    model = first("model name", "cpu model", "Model Name", "cpu") or lscpu.get("Model name")
    vendor = first("vendor_id", "vendor") or lscpu.get("Vendor ID")
    return {"cpu_model": model, "cpu_vendor": vendor}


def _topology(
    host: HostAccess, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> dict[str, Any]:
    """Sockets, cores, threads: /proc/cpuinfo ids, else sysfs topology, else lscpu."""
    online_text = _line(host, f"{_CPU}/online")
    processors = [b for b in cpuinfo if "processor" in b and _int(b["processor"]) is not None]
    online = parse_cpu_list(online_text) or [int(b["processor"]) for b in processors] or None

    # (package, core) per logical CPU
    placement: dict[int, tuple[str, str]] = {}
    for b in processors:
        package = b.get("physical id", b.get("package"))
        core = b.get("core id", b.get("core"))
        if package is not None and core is not None:
            placement[int(b["processor"])] = (package, core)
    if online and len(placement) < len(online):
        placement = {}
        for cpu in online:
            package = _line(host, f"{_CPU}/cpu{cpu}/topology/physical_package_id")
            core = _line(host, f"{_CPU}/cpu{cpu}/topology/core_id")
            if package is None or core is None:
                placement = {}
                break
            placement[cpu] = (package, core)

    logical = len(online) if online else _int(lscpu.get("CPU(s)"))
    sockets = physical = threads = None
    siblings: list[str] | None = None
    if placement:
        sockets = len({p for p, _ in placement.values()})
        cores: dict[tuple[str, str], list[int]] = {}
        for cpu, key in sorted(placement.items()):
            cores.setdefault(key, []).append(cpu)
        physical = len(cores)
        siblings = sorted(
            (format_cpu_list(c) for c in cores.values()), key=lambda s: parse_cpu_list(s) or []
        )
    else:
        sockets = _int(lscpu.get("Socket(s)"))
        per_socket = _int(lscpu.get("Core(s) per socket"))
        physical = sockets * per_socket if sockets and per_socket else None
    if logical and physical:
        threads = max(1, logical // physical)
    elif lscpu.get("Thread(s) per core"):
        threads = _int(lscpu.get("Thread(s) per core"))

    summary = None
    if sockets and physical and threads and logical:
        summary = (
            f"{sockets} socket{'s' if sockets != 1 else ''} x {physical // sockets} "
            f"core{'s' if physical // sockets != 1 else ''} x {threads} "
            f"thread{'s' if threads != 1 else ''} = {logical} CPU{'s' if logical != 1 else ''}"
        )
    return {
        "sockets": sockets,
        "physical_cores": physical,
        "logical_cpus": logical,
        "threads_per_core": threads,
        "cpu_topology": summary,
        "cpus_online": online_text or (format_cpu_list(online) if online else None),
        "smt_siblings": siblings,
    }


def _caches(
    host: HostAccess, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> dict[str, str] | None:
    caches: dict[str, str] = {}
    for index in range(16):
        base = f"{_CPU}/cpu0/cache/index{index}"
        level, kind, size = (
            _line(host, f"{base}/level"),
            _line(host, f"{base}/type"),
            _line(host, f"{base}/size"),
        )
        if level is None:
            break
        if size is None:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind or "", "")
        caches[f"L{level}{suffix}"] = _human_cache_size(size)
    if caches:
        return caches
    for key in ("L1d cache", "L1i cache", "L2 cache", "L3 cache", "L4 cache"):
        if lscpu.get(key):
            caches[key.split()[0]] = lscpu[key]
    if caches:
        return caches
    for block in cpuinfo:
        if block.get("cache size"):
            return {"cache size": block["cache size"]}
    return None


def _numa_nodes(host: HostAccess, lscpu: dict[str, str]) -> int | None:
    nodes = parse_cpu_list(_line(host, "/sys/devices/system/node/online"))
    return len(nodes) if nodes else _int(lscpu.get("NUMA node(s)"))


def _memory(meminfo: dict[str, str]) -> dict[str, Any]:
    return {
        "memory_total_bytes": _meminfo_bytes(meminfo, "MemTotal"),
        "memory_available_bytes": _meminfo_bytes(meminfo, "MemAvailable"),
        "swap_total_bytes": _meminfo_bytes(meminfo, "SwapTotal"),
        "hugepages_total": _int(meminfo.get("HugePages_Total")),
        "hugepage_size_bytes": _meminfo_bytes(meminfo, "Hugepagesize"),
    }


def _frequency(host: HostAccess, online: list[int] | None) -> dict[str, Any]:
    governors: dict[str, list[int]] = {}
    for cpu in online or [0]:
        governor = _line(host, f"{_CPU}/cpu{cpu}/cpufreq/scaling_governor")
        if governor is None:
            if cpu == (online or [0])[0]:
                break  # no cpufreq at all (VMs, containers): do not probe every CPU
            continue
        governors.setdefault(governor, []).append(cpu)

    def mhz(name: str) -> float | None:
        khz = _int(_line(host, f"{_CPU}/cpu0/cpufreq/{name}"))
        return khz / 1000.0 if khz is not None else None

    turbo = None
    no_turbo = _int(_line(host, f"{_CPU}/intel_pstate/no_turbo"))
    boost = _int(_line(host, f"{_CPU}/cpufreq/boost"))
    if no_turbo is not None:
        turbo = "off" if no_turbo else "on"
    elif boost is not None:
        turbo = "on" if boost else "off"
    active = _int(_line(host, f"{_CPU}/smt/active"))
    return {
        "cpufreq_driver": _line(host, f"{_CPU}/cpu0/cpufreq/scaling_driver"),
        "cpu_governors": {g: format_cpu_list(c) for g, c in governors.items()} or None,
        "cpu_freq_min_mhz": mhz("cpuinfo_min_freq"),
        "cpu_freq_max_mhz": mhz("cpuinfo_max_freq"),
        "turbo": turbo,
        "smt_control": _line(host, f"{_CPU}/smt/control"),
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


def _virtualization(
    host: HostAccess, cpuinfo: list[dict[str, str]], lscpu: dict[str, str]
) -> dict[str, Any]:
    """systemd-detect-virt when present; else DMI names, the CPU's hypervisor flag, lscpu."""

    def detect(flag: str) -> str | None:
        result = host.run(["systemd-detect-virt", flag], TOOL_TIMEOUT)
        if result is None:
            return None
        word = result[1].strip().splitlines()[0].strip() if result[1].strip() else ""
        return word or None

    hypervisor = detect("--vm")
    if hypervisor is None:
        dmi = " ".join(
            filter(
                None,
                (
                    _line(host, "/sys/class/dmi/id/sys_vendor"),
                    _line(host, "/sys/class/dmi/id/product_name"),
                ),
            )
        ).lower()
        hypervisor = next((name for needle, name in _HYPERVISOR_NAMES if needle in dmi), None)
        if hypervisor is None and lscpu.get("Hypervisor vendor"):
            hypervisor = lscpu["Hypervisor vendor"].lower()
        if hypervisor is None:
            xen = _line(host, "/sys/hypervisor/type")
            flags = next((b["flags"].split() for b in cpuinfo if "flags" in b), None)
            if xen:
                hypervisor = xen
            elif flags is not None:
                hypervisor = "unknown hypervisor" if "hypervisor" in flags else "none"

    container = detect("--container")
    if container is None:
        if host.read_file("/.dockerenv") is not None:
            container = "docker"
        elif host.read_file("/run/.containerenv") is not None:
            container = "podman"
        else:
            cgroup = _text(host, "/proc/1/cgroup") or ""
            container = next(
                (c for c in ("docker", "lxc", "kubepods", "containerd") if c in cgroup), None
            )

    parts = [h for h in (hypervisor,) if h and h != "none"]
    if container and container != "none":
        parts.append(f"container {container}")
    if parts:
        summary: str | None = ", ".join(parts)
    else:  # "none" only when the hypervisor check said so; an unknown stays unknown
        summary = "none" if hypervisor == "none" else None
    return {"hypervisor": hypervisor, "container": container, "virtualization": summary}


# --- tool versions ----------------------------------------------------------------------

#: How to ask a tool its version when ``--version`` is not the way (or prints too much).
VERSION_COMMANDS: dict[str, list[str]] = {
    "memcached": ["-V"],
    "redis-server": ["--version"],
    "redis-cli": ["--version"],
    "redis-benchmark": ["--version"],
    "memtier_benchmark": ["--version"],
    "memcaslap": ["--version"],
    "memaslap": ["--version"],
    "hyperfine": ["--version"],
    "gcc": ["--version"],
    "g++": ["--version"],
    "clang": ["--version"],
    "cc": ["--version"],
    "python3": ["--version"],
    "python": ["--version"],
    "perf": ["--version"],
    "fio": ["--version"],
    "wrk": ["-v"],
    "nginx": ["-v"],
    "java": ["-version"],
    "go": ["version"],
    "ssh": ["-V"],
    "taskset": ["--version"],
    "rustc": ["--version"],
    "cargo": ["--version"],
    "node": ["--version"],
    "iperf3": ["--version"],
    "sysbench": ["--version"],
    "stress-ng": ["--version"],
    "valkey-server": ["--version"],
    "dragonfly": ["--version"],
}


def _version_line(output: str) -> str | None:
    """The first non-empty line that names a version (has a digit), at most 200 characters."""
    for line in output.splitlines():
        line = line.strip()
        if line and re.search(r"\d", line):
            return line[:200]
    return None


def tool_version(host: HostAccess, tool: str, timeout: float = TOOL_TIMEOUT) -> str | None:
    """``tool``'s version line, or None when it is not installed, hangs or says nothing useful.

    ``tool`` may be a name on PATH or a path (``./memtier_benchmark/memtier_benchmark``);
    the version flag is looked up by its base name, ``--version`` otherwise.
    """
    flags = VERSION_COMMANDS.get(os.path.basename(tool), ["--version"])
    result = host.run([tool, *flags], timeout)
    if result is None:
        return None
    code, output = result
    line = _version_line(output)
    if line is None:
        return None
    # Some tools (wrk) print their version and a usage text, then exit non-zero; but a
    # non-zero exit with an error message is no version.
    if code != 0 and (
        not re.search(r"\d+\.\d+", line)
        or re.search(
            r"error|unknown|invalid|unrecognized|illegal|usage|not found", line, re.IGNORECASE
        )
    ):
        return None
    return line


#: Words after which the next word is again a command (keywords, wrappers).
_COMMAND_PREFIXES = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "do",
        "while",
        "until",
        "{",
        "!",
        "time",
        "sudo",
        "env",
        "nohup",
        "command",
        "builtin",
        "exec",
    }
)
#: Shell built-ins and trivial utilities whose version says nothing about a result.
_NOT_TOOLS = frozenset(
    {
        "cd",
        "echo",
        "printf",
        "export",
        "set",
        "unset",
        "exit",
        "true",
        "false",
        "test",
        "[",
        "[[",
        "fi",
        "done",
        "esac",
        "case",
        "for",
        "}",
        "sleep",
        "cat",
        "rm",
        "mkdir",
        "cp",
        "mv",
        "kill",
        "wait",
        "source",
        ".",
        "eval",
        "read",
        "shift",
        "return",
        "trap",
        "ulimit",
        "umask",
    }
)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "|&", ";;"})


def command_tools(commands: Iterable[str]) -> list[str]:
    """The programs a list of shell commands runs, for `capture`'s ``tools``.

    The first word of every simple command (split at ``&& || ; | &``), after
    ``VAR=value`` assignments and wrappers such as ``sudo``/``env``/``time``; shell
    built-ins and trivial utilities (``cd``, ``echo``, ``sleep``...) are left out, and
    so are words holding a ``{param}`` or ``$VAR``. Order kept, duplicates dropped; a
    command that does not parse is skipped. A wrapper with options (``taskset -c 1 x``)
    yields the wrapper only.
    """
    tools: list[str] = []
    for command in commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            continue
        at_start = True
        for word in words:
            if word in _SEPARATORS:
                at_start = True
                continue
            if not at_start:
                continue
            if word in _COMMAND_PREFIXES or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
                continue
            at_start = False
            if word in _NOT_TOOLS or word.startswith("-") or "{" in word or "$" in word:
                continue
            if word not in tools:
                tools.append(word)
    return tools


# --- capture ----------------------------------------------------------------------------

_FILE_ARTIFACTS = (
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/etc/os-release",
    "/proc/cmdline",
    "/proc/swaps",
)


def capture(
    host: HostAccess, tools: Sequence[str] = (), *, timeout: float = TOOL_TIMEOUT
) -> Environment:
    """Describe ``host`` and the versions of ``tools``; never raises for what it cannot read."""
    artifacts: dict[str, bytes] = {}
    for path in _FILE_ARTIFACTS:
        data = host.read_file(path)
        if data is not None:
            artifacts[path] = data
    os_release = artifacts.get("/etc/os-release")
    if os_release is None:
        for path in ("/usr/lib/os-release", "/etc/openwrt_release"):
            if (data := host.read_file(path)) is not None:
                artifacts[path] = data
                break
    for name, argv in (("uname -a", ["uname", "-a"]), ("lscpu", ["lscpu"])):
        if (out := _output(host, argv, timeout)) is not None:
            artifacts[name] = out.encode()

    def artifact(name: str) -> str:
        return artifacts.get(name, b"").decode("utf-8", errors="replace")

    cpuinfo = parse_cpuinfo(artifact("/proc/cpuinfo"))
    lscpu = parse_key_values(artifact("lscpu"))
    meminfo = parse_key_values(artifact("/proc/meminfo"))

    release = {}
    for name in ("/etc/os-release", "/usr/lib/os-release", "/etc/openwrt_release"):
        if name in artifacts:
            release = parse_os_release(artifact(name))
            break
    uname_a = artifact("uname -a").strip() or None
    uname_m = _output(host, ["uname", "-m"], timeout)

    info: dict[str, Any] = {
        "schema": SCHEMA,
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    hostname = _line(host, "/proc/sys/kernel/hostname")
    if hostname is None and (out := _output(host, ["uname", "-n"], timeout)):
        hostname = out.strip() or None
    info["hostname"] = hostname
    info["architecture"] = (uname_m.strip() or None) if uname_m else lscpu.get("Architecture")
    info.update(_cpu_identity(cpuinfo, lscpu))
    topology = _topology(host, cpuinfo, lscpu)
    info.update(topology)
    info["caches"] = _caches(host, cpuinfo, lscpu)
    info["numa_nodes"] = _numa_nodes(host, lscpu)
    info.update(_memory(meminfo))
    info["swap_devices"] = (
        parse_swaps(artifact("/proc/swaps")) if "/proc/swaps" in artifacts else None
    )
    thp = "/sys/kernel/mm/transparent_hugepage"
    info["transparent_hugepages"] = _bracketed(_text(host, f"{thp}/enabled"))
    info["thp_defrag"] = _bracketed(_text(host, f"{thp}/defrag"))
    info["kernel"] = uname_a
    info["kernel_release"] = _line(host, "/proc/sys/kernel/osrelease")
    info["os"] = (
        release.get("PRETTY_NAME") or release.get("DISTRIB_DESCRIPTION") or release.get("NAME")
    )
    info["boot_cmdline"] = artifact("/proc/cmdline").strip() or None
    info.update(_frequency(host, parse_cpu_list(topology["cpus_online"])))
    info["clocksource"] = _line(
        host, "/sys/devices/system/clocksource/clocksource0/current_clocksource"
    )
    info["aslr"] = _int(_line(host, "/proc/sys/kernel/randomize_va_space"))
    info["numa_balancing"] = _int(_line(host, "/proc/sys/kernel/numa_balancing"))
    info["swappiness"] = _int(_line(host, "/proc/sys/vm/swappiness"))
    info["mglru"] = _line(host, "/sys/kernel/mm/lru_gen/enabled")
    info.update(_virtualization(host, cpuinfo, lscpu))
    loadavg = (_line(host, "/proc/loadavg") or "").split()[:3]
    try:
        info["loadavg"] = [float(x) for x in loadavg] if len(loadavg) == 3 else None
    except ValueError:
        info["loadavg"] = None
    info["python_version"] = platform.python_version()
    info["perflab_version"] = perflab.__version__
    info["tools"] = {tool: tool_version(host, tool, timeout) for tool in dict.fromkeys(tools)}
    return Environment(info=info, artifacts=artifacts)
