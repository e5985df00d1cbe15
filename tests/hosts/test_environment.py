"""Environment capture: on this machine, and through a fake host feeding synthetic
files (the MGLRU memcached
experiment's MIPS router, a two-socket SMT server, missing and odd files)."""

from __future__ import annotations

import json
import os
import platform
import re
import stat
import time
from pathlib import Path

import pytest
from perflab.hosts.base import Queried, Reader
from perflab.hosts.environment import Environment, capture
from perflab.hosts.local import LocalHost
from perflab.hosts.proc_text import cpu_list_or_none, format_cpu_list
from perflab.hosts.tool_versions import command_tools, tool_version
from perflab.report.environment import VOLATILE_KEYS, diff_environments, environment_rows


class FakeHost:
    """A host made of a dict of files and a dict of command outputs; records what was run."""

    def __init__(
        self,
        files: dict[str, str | bytes] | None = None,
        commands: dict[tuple[str, ...], tuple[int, str]] | None = None,
    ):
        self.files = {k: v.encode() if isinstance(v, str) else v for k, v in (files or {}).items()}
        self.commands = commands or {}
        self.ran: list[list[str]] = []

    def read_file(self, path: str) -> bytes | None:
        return self.files.get(path)

    def list_dir(self, path: str) -> list[str] | None:
        prefix = path.rstrip("/") + "/"
        names = {f[len(prefix) :].split("/")[0] for f in self.files if f.startswith(prefix)}
        return sorted(names) or None

    def query(self, argv: list[str], timeout: float) -> Queried | None:
        assert timeout > 0
        self.ran.append(list(argv))
        answer = self.commands.get(tuple(argv))
        return None if answer is None else Queried(*answer)


# The MGLRU memcached experiment's device under test (an EdgeRouter), as its report prints it.
EDGEROUTER_CPUINFO = """system type\t\t: UBNT_E200 (CN6120p1.1-800-NSP)
machine\t\t\t: Unknown
processor\t\t: 0
cpu model\t\t: Cavium Octeon II V0.1
BogoMIPS\t\t: 1600.00
wait instruction\t: yes
tlb_entries\t\t: 128
isa\t\t\t: mips1 mips2 mips3 mips4 mips5 mips32r1 mips32r2 mips64r1 mips64r2
Options implemented\t: tlb rixiex 4kex octeon_cache 32fpr prefetch mcheck ejtag llsc rixi lpa
shadow register sets\t: 1
package\t\t\t: 0
core\t\t\t: 0
VCED exceptions\t\t: not available
VCEI exceptions\t\t: not available

processor\t\t: 1
cpu model\t\t: Cavium Octeon II V0.1
BogoMIPS\t\t: 1600.00
tlb_entries\t\t: 128
package\t\t\t: 0
core\t\t\t: 1
VCED exceptions\t\t: not available
VCEI exceptions\t\t: not available

"""
EDGEROUTER_MEMINFO = """MemTotal:        1991964 kB
MemFree:         1917304 kB
MemAvailable:    1896856 kB
SwapTotal:        995324 kB
SwapFree:         995324 kB
"""
EDGEROUTER_SWAPS = (
    "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
    "/dev/zram0                              partition\t995324\t\t0\t\t100\n"
)
EDGEROUTER_OPENWRT = """DISTRIB_ID='OpenWrt'
DISTRIB_RELEASE='22.03.0-rc6'
DISTRIB_REVISION='r19590-042d558536'
DISTRIB_TARGET='octeon/generic'
DISTRIB_DESCRIPTION='OpenWrt 22.03.0-rc6 r19590-042d558536'
"""
EDGEROUTER_UNAME = "Linux OpenWrt 6.0.0-rc3+ #0 SMP Sun Jul 31 15:12:47 2022 mips64 GNU/Linux"


def edgerouter_host() -> FakeHost:
    return FakeHost(
        files={
            "/proc/cpuinfo": EDGEROUTER_CPUINFO,
            "/proc/meminfo": EDGEROUTER_MEMINFO,
            "/proc/swaps": EDGEROUTER_SWAPS,
            "/etc/openwrt_release": EDGEROUTER_OPENWRT,
            "/proc/cmdline": "console=ttyS0,115200\n",
            "/proc/sys/kernel/hostname": "OpenWrt\n",
        },
        commands={
            ("uname", "-a"): (0, EDGEROUTER_UNAME + "\n"),
            ("uname", "-m"): (0, "mips64\n"),
            ("memcached", "-V"): (0, "memcached 1.6.9\n"),
            ("memtier_benchmark/memtier_benchmark", "--version"): (
                0,
                "memtier_benchmark 1.3.0\nCopyright (C) 2011-2022 Redis Ltd.\n",
            ),
        },
    )


def test_edgerouter_through_a_fake_host():
    host = edgerouter_host()
    assert isinstance(host, Reader)
    env = capture(host, tools=["memcached", "memtier_benchmark/memtier_benchmark", "redis-server"])
    info = env.info
    assert info["hostname"] == "OpenWrt" and info["architecture"] == "mips64"
    assert info["cpu_model"] == "Cavium Octeon II V0.1"
    assert (
        info["sockets"],
        info["physical_cores"],
        info["logical_cpus"],
        info["threads_per_core"],
    ) == (1, 2, 2, 1)
    assert info["cpu_topology"] == "1 socket x 2 cores x 1 thread = 2 CPUs"
    assert info["smt_siblings"] == ["0", "1"]
    assert info["memory_total_bytes"] == 1991964 * 1024
    assert info["memory_available_bytes"] == 1896856 * 1024
    assert info["swap_total_bytes"] == 995324 * 1024
    assert info["swap_devices"] == [
        {
            "name": "/dev/zram0",
            "type": "partition",
            "size_bytes": 995324 * 1024,
            "used_bytes": 0,
            "priority": 100,
        }
    ]
    assert info["kernel"] == EDGEROUTER_UNAME
    assert info["os"] == "OpenWrt 22.03.0-rc6 r19590-042d558536"
    assert info["boot_cmdline"] == "console=ttyS0,115200"
    assert info["tools"] == {
        "memcached": "memcached 1.6.9",
        "memtier_benchmark/memtier_benchmark": "memtier_benchmark 1.3.0",
        "redis-server": None,
    }
    # What the router does not expose is unknown, not guessed.
    for key in (
        "caches",
        "numa_nodes",
        "cpu_governors",
        "turbo",
        "smt_control",
        "transparent_hugepages",
        "hypervisor",
        "container",
        "virtualization",
        "clocksource",
        "mglru",
    ):
        assert info[key] is None, key
    assert set(env.artifacts) == {
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/swaps",
        "/proc/cmdline",
        "/etc/openwrt_release",
        "uname -a",
    }
    assert env.artifacts["/proc/cpuinfo"] == EDGEROUTER_CPUINFO.encode()
    assert ["memcached", "-V"] in host.ran  # memcached's own version flag, not --version


def _server_files() -> dict[str, str]:
    """Two sockets x 2 cores x 2 threads; CPUs n and n+4 are SMT siblings."""
    blocks = []
    for cpu in range(8):
        core = cpu % 4
        blocks.append(
            f"processor\t: {cpu}\nvendor_id\t: GenuineIntel\n"
            f"model name\t: Intel(R) Xeon(R) Gold 6138 CPU @ 2.00GHz\n"
            f"physical id\t: {core // 2}\ncore id\t\t: {core % 2}\n"
            f"flags\t\t: fpu vme de pse tsc msr ht\n"
        )
    files = {
        "/proc/cpuinfo": "\n".join(blocks) + "\n",
        "/proc/meminfo": "MemTotal:       196608000 kB\nMemAvailable:   190000000 kB\n"
        "SwapTotal:             0 kB\nHugePages_Total:      16\nHugepagesize:       2048 kB\n",
        "/proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        "/etc/os-release": '# comment\nNAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n',
        "/sys/devices/system/cpu/online": "0-7\n",
        "/sys/devices/system/node/online": "0-1\n",
        "/sys/devices/system/cpu/intel_pstate/no_turbo": "1\n",
        "/sys/devices/system/cpu/smt/control": "on\n",
        "/sys/devices/system/cpu/smt/active": "1\n",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver": "intel_pstate\n",
        "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq": "1000000\n",
        "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "3700000\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "/sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
        "/sys/kernel/mm/lru_gen/enabled": "0x0007\n",
        "/proc/loadavg": "0.50 0.40 0.30 1/200 1234\n",
    }
    for cpu in range(8):
        files[f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"] = (
            "performance\n" if cpu < 4 else "powersave\n"
        )
    for index, (level, kind, size) in enumerate(
        [
            (1, "Data", "32K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "1024K"),
            (3, "Unified", "28160K"),
        ]
    ):
        base = f"/sys/devices/system/cpu/cpu0/cache/index{index}"
        files.update(
            {
                f"{base}/level": f"{level}\n",
                f"{base}/type": f"{kind}\n",
                f"{base}/size": f"{size}\n",
            }
        )
    return files


def test_two_socket_smt_server():
    host = FakeHost(
        _server_files(),
        {
            ("systemd-detect-virt", "--vm"): (1, "none\n"),
            ("systemd-detect-virt", "--container"): (1, "none\n"),
        },
    )
    info = capture(host).info
    assert (
        info["sockets"],
        info["physical_cores"],
        info["logical_cpus"],
        info["threads_per_core"],
    ) == (2, 4, 8, 2)
    assert info["cpu_topology"] == "2 sockets x 2 cores x 2 threads = 8 CPUs"
    assert info["smt_siblings"] == ["0,4", "1,5", "2,6", "3,7"]
    assert info["cpu_vendor"] == "GenuineIntel"
    assert info["caches"] == {"L1d": "32 KiB", "L1i": "32 KiB", "L2": "1 MiB", "L3": "28160 KiB"}
    assert info["numa_nodes"] == 2
    assert info["cpu_governors"] == {"performance": "0-3", "powersave": "4-7"}
    assert info["cpufreq_driver"] == "intel_pstate"
    assert (info["cpu_freq_min_mhz"], info["cpu_freq_max_mhz"]) == (1000.0, 3700.0)
    assert info["turbo"] == "off"
    assert (info["smt_control"], info["smt_active"]) == ("on", True)
    assert (info["transparent_hugepages"], info["thp_defrag"]) == ("always", "madvise")
    assert (info["hugepages_total"], info["hugepage_size_bytes"]) == (16, 2048 * 1024)
    assert info["swap_devices"] == [] and info["swap_total_bytes"] == 0
    assert info["os"] == "Ubuntu 22.04.4 LTS"
    assert info["mglru"] == "0x0007"
    assert (info["hypervisor"], info["container"], info["virtualization"]) == (
        "none",
        "none",
        "none",
    )
    assert info["loadavg"] == [0.5, 0.4, 0.3]
    assert info["kernel"] is None and "uname -a" not in capture(host).artifacts


def test_topology_from_sysfs_when_cpuinfo_has_no_ids():
    """arm64's /proc/cpuinfo has no physical/core ids; lscpu gives the model name."""
    files = {
        "/proc/cpuinfo": "".join(
            f"processor\t: {c}\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\n" for c in range(4)
        ),
        "/sys/devices/system/cpu/online": "0-3",
    }
    for cpu in range(4):
        files[f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"] = "0\n"
        files[f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id"] = f"{cpu}\n"
    lscpu = "Architecture:        aarch64\nModel name:          Neoverse-N1\nL1d cache:           256 KiB (4 instances)\n"
    info = capture(FakeHost(files, {("lscpu",): (0, lscpu)})).info
    assert info["cpu_model"] == "Neoverse-N1"
    assert (info["sockets"], info["physical_cores"], info["logical_cpus"]) == (1, 4, 4)
    assert info["caches"] == {"L1d": "256 KiB (4 instances)"}


def test_lscpu_alone_gives_the_counts():
    lscpu = (
        "CPU(s):              16\nThread(s) per core:  2\nCore(s) per socket:  4\nSocket(s):           2\n"
        "NUMA node(s):        2\nModel name:          Some CPU\nHypervisor vendor:   VMware\n"
    )
    info = capture(FakeHost({}, {("lscpu",): (0, lscpu)})).info
    assert (
        info["sockets"],
        info["physical_cores"],
        info["logical_cpus"],
        info["threads_per_core"],
    ) == (2, 8, 16, 2)
    assert info["numa_nodes"] == 2 and info["hypervisor"] == "vmware"


def test_nothing_readable_is_all_unknown_and_never_raises():
    env = capture(FakeHost(), tools=["memcached", "gcc"])
    info = env.info
    assert env.artifacts == {}
    known = {"schema", "captured_at", "tools", "unread", "unread_why"}
    assert {k for k, v in info.items() if v is not None} == known
    assert info["unread"] == sorted(k for k, v in info.items() if v is None)
    assert "python_version" not in info  # the controller's, not this host's
    assert info["tools"] == {"memcached": None, "gcc": None}
    rows = dict(environment_rows(info))
    assert rows["Kernel"] == "unknown"
    # an unknown says what the host lacks
    assert rows["CPU"] == "unknown: no model line in /proc/cpuinfo and no lscpu"
    assert rows["Memory"] == "unknown: no MemTotal in /proc/meminfo"
    assert rows["Swap"] == "unknown: no /proc/swaps"
    assert rows["Transparent huge pages"].endswith("(a kernel without THP)")
    assert rows["memcached"] == "not found"


@pytest.mark.parametrize(
    "files",
    [
        {"/proc/cpuinfo": b"", "/proc/meminfo": b"", "/proc/swaps": b""},
        {
            "/proc/cpuinfo": b"\xff\xfe garbage without colons\n\n\n",
            "/proc/meminfo": b"MemTotal: lots kB\nMemAvailable:\n",
            "/proc/swaps": b"Filename Type\n/dev/sda2 partition notanumber\n",
            "/sys/devices/system/cpu/online": b"zero-seven",
            "/proc/loadavg": b"high\n",
            "/sys/kernel/mm/transparent_hugepage/enabled": b"\n",
            "/etc/os-release": b'PRETTY_NAME="unterminated\n',
            "/sys/devices/system/cpu/cpu0/cache/index0/level": b"1",
        },
        {
            "/proc/cpuinfo": "processor : x\nprocessor : 1\nphysical id : 0\n",
            "/sys/devices/system/cpu/online": "0,2-",
            "/proc/swaps": "Filename\tType\tSize\tUsed\tPriority\n/swapfile file 100 x -2\n",
        },
    ],
)
def test_odd_files_do_not_break_the_capture(files):
    info = capture(FakeHost(files)).info
    json.dumps(info)  # still plain JSON
    assert info["memory_total_bytes"] is None
    assert info["loadavg"] is None
    environment_rows(info)


def test_swap_rows_keep_what_parses():
    files = {"/proc/swaps": "Filename\tType\tSize\tUsed\tPriority\n/swapfile file 100 x -2\n"}
    assert capture(FakeHost(files)).info["swap_devices"] == [
        {
            "name": "/swapfile",
            "type": "file",
            "size_bytes": 102400,
            "used_bytes": None,
            "priority": -2,
        }
    ]


def test_os_release_fallback_order():
    files = {"/usr/lib/os-release": 'NAME=Fedora\nPRETTY_NAME="Fedora Linux 40"\n'}
    env = capture(FakeHost(files))
    assert env.info["os"] == "Fedora Linux 40" and "/usr/lib/os-release" in env.artifacts


# --- tool versions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "argv", "answer", "expected"),
    [
        ("memcached", ["memcached", "-V"], (0, "memcached 1.6.21\n"), "memcached 1.6.21"),
        (
            "gcc",
            ["gcc", "--version"],
            (0, "gcc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022\n"),
            "gcc (Debian 12.2.0-14) 12.2.0",
        ),
        (
            "java",
            ["java", "-version"],
            (0, 'openjdk version "17.0.2" 2022-01-18\nOpenJDK Runtime\n'),
            'openjdk version "17.0.2" 2022-01-18',
        ),
        (
            "wrk",
            ["wrk", "-v"],
            (1, "wrk 4.1.0 [epoll] Copyright (C) 2012 Will Glozer\nUsage: wrk <options> <url>\n"),
            "wrk 4.1.0 [epoll] Copyright (C) 2012 Will Glozer",
        ),
        (
            "mytool",
            ["mytool", "--version"],
            (2, "mytool: unknown option --version (try -h) 1.0\n"),
            None,
        ),
        ("mytool", ["mytool", "--version"], (0, "\n\n"), None),
        ("mytool", ["mytool", "--version"], (0, "\nmytool version 3\n"), "mytool version 3"),
        (
            "/opt/bin/redis-server",
            ["/opt/bin/redis-server", "--version"],
            (0, "Redis server v=7.2.4 sha=0\n"),
            "Redis server v=7.2.4 sha=0",
        ),
    ],
)
def test_tool_version_flags_and_answers(tool, argv, answer, expected):
    host = FakeHost(commands={tuple(argv): answer})
    assert tool_version(host, tool) == expected
    assert host.ran == [argv]


def test_tool_version_of_a_tool_that_is_missing_or_hangs():
    assert tool_version(FakeHost(), "memtier_benchmark") is None  # run() gave None


def test_local_run_times_out_and_kills_its_process_group(tmp_path: Path):
    pidfile = tmp_path / "pid"
    script = tmp_path / "slowtool"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nsleep 30 &\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    assert LocalHost().query([str(script), "--version"], timeout=0.5) is None
    pgid = int(pidfile.read_text())

    def leftovers() -> list[str]:
        found = []
        for stat_file in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat_file.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(stat_file.parent.name)
        return found

    # SIGKILL is delivered asynchronously: poll, bounded, until the group is gone.
    deadline = time.monotonic() + 10
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert leftovers() == []


def test_local_host_missing_things():
    host = LocalHost()
    assert host.read_file("/nonexistent/perflab/file") is None
    assert host.read_file("/proc") is None  # a directory
    assert host.query(["/nonexistent/perflab-tool"], 1.0) is None
    assert host.query(["sh", "-c", "echo out; echo err >&2; exit 3"], 5.0) == (3, "out\nerr\n")


# --- the real machine -----------------------------------------------------------------


def test_capture_this_machine():
    env = capture(
        LocalHost(),
        tools=[
            "memcached",
            "redis-server",
            "hyperfine",
            "gcc",
            "python3",
            "perflab-no-such-tool-xyz",
        ],
        controller=True,
    )
    info = env.info
    assert isinstance(env, Environment)
    assert json.loads(json.dumps(info)) == info
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    if model:
        assert info["cpu_model"] == model.group(1).strip()
    assert len(os.sched_getaffinity(0)) <= info["logical_cpus"] <= os.cpu_count()
    assert info["physical_cores"] * info["threads_per_core"] == info["logical_cpus"]
    assert info["sockets"] >= 1
    page_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert info["memory_total_bytes"] == pytest.approx(page_bytes, rel=0.01)
    assert 0 < info["memory_available_bytes"] <= info["memory_total_bytes"]
    assert info["kernel"].startswith("Linux ") and platform.release() in info["kernel"]
    assert info["kernel_release"] == platform.release()
    assert info["architecture"] == platform.machine()
    assert info["os"]
    assert info["boot_cmdline"] == Path("/proc/cmdline").read_text().strip()
    assert info["python_version"] == platform.python_version()
    assert re.fullmatch(r"memcached \d+\.\d+\.\d+", info["tools"]["memcached"])
    assert re.match(r"Redis server v=\d+\.\d+", info["tools"]["redis-server"])
    assert re.fullmatch(r"hyperfine \d+\.\d+\.\d+", info["tools"]["hyperfine"])
    assert info["tools"]["gcc"].startswith("gcc ")
    assert re.fullmatch(r"Python \d+\.\d+\.\d+", info["tools"]["python3"])
    assert info["tools"]["perflab-no-such-tool-xyz"] is None
    assert env.artifacts["/proc/cpuinfo"] == Path("/proc/cpuinfo").read_bytes()
    assert env.artifacts["/etc/os-release"] == Path("/etc/os-release").read_bytes()
    assert {"/proc/meminfo", "/proc/cmdline", "/proc/swaps", "uname -a"} <= set(env.artifacts)
    labels = [label for label, _ in environment_rows(info)]
    assert labels[:3] == ["Host", "Captured", "CPU"] and labels[-1] == "perflab-no-such-tool-xyz"


def test_two_captures_of_this_machine_differ_only_in_volatile_keys():
    a = capture(LocalHost(), tools=["memcached"]).info
    b = capture(LocalHost(), tools=["memcached"]).info
    assert diff_environments(a, b) == []
    assert all(
        key.split(".")[0] in VOLATILE_KEYS
        for key, _, _ in diff_environments(a, b, include_volatile=True)
    )


# --- display and diff -----------------------------------------------------------------


def test_environment_rows_show_units_and_order():
    info = capture(edgerouter_host(), tools=["memcached"]).info
    rows = environment_rows(info)
    shown = dict(rows)
    assert [label for label, _ in rows][:5] == [
        "Host",
        "Captured",
        "CPU",
        "Vendor / arch",
        "Topology",
    ]
    assert shown["CPU"] == "Cavium Octeon II V0.1"
    assert shown["Memory"] == "1.9 GiB total, 1.8 GiB available at capture"
    assert shown["Swap"] == "/dev/zram0 (partition, 972.0 MiB, priority 100)"
    assert shown["OS"] == "OpenWrt 22.03.0-rc6 r19590-042d558536"
    assert shown["memcached"] == "memcached 1.6.9"
    assert shown["Caches (per instance)"] == "unknown"
    server = dict(environment_rows(capture(FakeHost(_server_files())).info))
    assert server["CPU governor"] == "performance (CPUs 0-3), powersave (CPUs 4-7)"
    assert server["CPU frequency"] == "1000-3700 MHz, driver intel_pstate, turbo off"
    assert server["SMT"] == "on, active"
    assert server["Transparent huge pages"] == "always (defrag madvise)"
    assert server["Huge pages"] == "16 of 2.0 MiB"


def test_diff_environments():
    a = {
        "cpu_model": "A",
        "tools": {"memcached": "memcached 1.6.9", "gcc": "gcc 12"},
        "caches": {"L2": "1 MiB"},
        "captured_at": "t1",
        "swap_devices": [],
    }
    b = {
        "cpu_model": "A",
        "tools": {"memcached": "memcached 1.6.18", "redis-server": "Redis 7"},
        "captured_at": "t2",
        "swap_devices": [{"name": "/dev/zram0"}],
        "mglru": "0x0007",
    }
    assert diff_environments(a, b) == [
        ("tools.memcached", "memcached 1.6.9", "memcached 1.6.18"),
        ("tools.gcc", "gcc 12", None),
        ("caches.L2", "1 MiB", None),
        ("swap_devices", [], [{"name": "/dev/zram0"}]),
        ("tools.redis-server", None, "Redis 7"),
        ("mglru", None, "0x0007"),
    ]
    assert ("captured_at", "t1", "t2") in diff_environments(a, b, include_volatile=True)
    assert diff_environments(a, a) == []


# --- helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]), ("0", [0]), ("", None), ("a-b", None), (None, None)],
)
def test_cpu_lists(text, cpus):
    assert cpu_list_or_none(text) == cpus
    if cpus:
        assert format_cpu_list(cpus) == text


def test_command_tools():
    assert command_tools(
        [
            "FOO=1 memcached -p {port} -U 0 &",
            "sudo taskset -c 1 ./bin/x --y | tee out && echo done; redis-server --port 1 >/dev/null 2>&1",
            "cd /tmp && make -j2",
            "if true; then hyperfine x; fi",
            "$HOME/bin/tool; {bin} --x",
            'echo "unterminated',
            "memcached -V",
            "./ensure-kernel.sh {kernel} && /opt/bin/redis-cli ping; ./memcached -d",
        ]
    ) == ["memcached", "taskset", "redis-server", "hyperfine"]  # well-known programs only


def test_one_reading_of_meminfo_and_cpu_lists_serves_capture_checks_and_monitors():
    """The environment, the system checks and the monitors read /proc/meminfo and the
    kernel's CPU lists through one parser (`perflab.hosts.proc_text`)."""
    from perflab.hosts.proc_text import cpu_list_or_none, meminfo_bytes, parse_cpu_list
    from perflab.observe.proc_sources import _meminfo
    from perflab.platform.system_reading import TreeReader, read_meminfo

    text = "MemTotal:       16318412 kB\nHugePages_Total:       2\nbogus line\n"
    assert meminfo_bytes(text) == {"MemTotal": 16318412 * 1024, "HugePages_Total": 2}
    assert _meminfo(text) == {"MemTotal_kib": 16318412.0, "HugePages_Total": 2.0}
    assert parse_cpu_list("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}
    assert cpu_list_or_none("0-2,5") == [0, 1, 2, 5] and cpu_list_or_none("x-y") is None
    with pytest.raises(ValueError):
        parse_cpu_list("3-x")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "proc").mkdir()
        (Path(root) / "proc" / "meminfo").write_text(text)
        assert read_meminfo(TreeReader(root)) == meminfo_bytes(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0.52 0.58 0.59 1/389 12345\n", (0.52, 0.58, 0.59)),
        ("3.00 2.50 1.75", (3.0, 2.5, 1.75)),
        ("0.52 0.58", None),
        ("high low none 1/2 3", None),
        ("", None),
        (None, None),
    ],
)
def test_one_reading_of_loadavg_serves_the_environment_and_the_load_check(tmp_path, text, expected):
    """/proc/loadavg is read by one parser: the environment's ``loadavg`` and the system
    check's load agree with it, and what is not three numbers is unknown in both."""
    from perflab.hosts.environment import _loadavg
    from perflab.hosts.proc_text import parse_loadavg
    from perflab.platform.system_reading import TreeReader
    from perflab.platform.system_state import load_check

    assert parse_loadavg(text) == expected
    (tmp_path / "proc").mkdir()
    if text is not None:
        (tmp_path / "proc" / "loadavg").write_text(text)
    reader = TreeReader(str(tmp_path))
    check = load_check(reader, 4)
    assert _loadavg(reader) == (list(expected) if expected else None)
    if expected is None:
        assert check.status == "unknown"
    else:
        assert (check.data["load1"], check.data["load5"], check.data["load15"]) == expected


def test_one_reading_of_a_processes_stat_serves_the_checks_and_pid_reuse():
    """/proc/PID/stat is read by one parser: a name with spaces and parentheses is kept
    whole, the fields after it are counted from its last ``)``, and what does not parse is
    None; this process's start time through `process_start_time` is the parser's."""
    import os

    from perflab.hosts.proc_text import PidStat, parse_pid_stat
    from perflab.hosts.process import process_start_time

    fields = ["S", "7", *["0"] * 9, "120", "30", *["0"] * 6, "98765", *["0"] * 30]
    assert parse_pid_stat(f"42 (a (b) c) {' '.join(fields)}") == PidStat("a (b) c", 7, 150, "98765")
    assert parse_pid_stat("42 (short) S 7 0") is None
    assert parse_pid_stat(f"42 (x) {' '.join(['S', 'seven', *fields[2:]])}") is None
    assert parse_pid_stat(None) is None
    mine = parse_pid_stat(open(f"/proc/{os.getpid()}/stat").read())
    assert mine is not None and mine.ppid == os.getppid()
    assert process_start_time(os.getpid()) == mine.start_time
