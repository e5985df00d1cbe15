"""Environment records of hosts that are not this machine: a minimal Linux device (a real
sshd whose sessions find only `sh`, `cat` and `uname`: no lscpu, no timeout, no Python)
and a NetBSD host (answering `uname` and `sysctl` only, no /proc). Capture takes what
each host says, names the facts it could not read, never errors, and never records this
machine's facts (its Python, perflab, tool versions) as the device's; those are the
controller's, recorded once in this machine's record."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from cli_helpers import perflab, write_spec
from perflab import _version
from perflab.hosts.base import Queried, Reader
from perflab.hosts.environment import capture
from perflab.hosts.remote import RemoteHost
from perflab.hosts.ssh import SshConnection, SshTarget
from perflab.store import Database
from sshd import Sshd, start_sshd

pytestmark = pytest.mark.server

#: What a minimal device's sessions find on PATH.
MINIMAL_PROGRAMS = ("sh", "cat", "uname")


class MinimalSshd(Sshd):
    """A real sshd whose sessions find only `MINIMAL_PROGRAMS` on PATH (the user's login
    shell interprets each command; every program it runs comes from that PATH)."""

    def _fake_kernel(self, kernel: str) -> str:  # sshd.py's hook for a session's PATH
        bin_dir = self.workdir / "minimal-bin"
        bin_dir.mkdir()
        for name in MINIMAL_PROGRAMS:
            found = shutil.which(name)
            assert found, name
            (bin_dir / name).symlink_to(found)
        return f'ForceCommand PATH={bin_dir}; eval "$SSH_ORIGINAL_COMMAND"\n'


@pytest.fixture(scope="module")
def minimal_sshd():
    with MinimalSshd(Path(tempfile.mkdtemp(prefix="perflab-sshd-")), kernel="minimal") as srv:
        yield srv


def _connection(srv: Sshd) -> SshConnection:
    return SshConnection(
        SshTarget.parse("dut", srv.destination, str(srv.identity), options=tuple(srv.options()))
    )


def _unread_is_every_unknown(info: dict) -> None:
    assert info["unread"] == sorted(k for k, v in info.items() if v is None)


def test_a_minimal_linux_device_is_described_by_what_it_has(minimal_sshd):
    conn = _connection(minimal_sshd)
    try:
        missing = conn.run("command -v lscpu timeout python3 sysctl", check=False)
        assert missing.returncode != 0 and missing.stdout == b""  # none of them there
        env = capture(RemoteHost(conn), tools=["python3", "memcached"])
    finally:
        conn.close()
    info = env.info
    # never this machine's facts: its Python and perflab, its tools' versions
    assert "python_version" not in info and "perflab_version" not in info
    assert info["tools"] == {"python3": None, "memcached": None}  # not installed there
    # what the device's files say (read with cat): this sshd's machine, /proc readable
    assert info["kernel_release"] == Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert info["hostname"] == Path("/proc/sys/kernel/hostname").read_text().strip()
    assert info["kernel"].startswith("Linux ")  # uname -a, else /proc/version
    assert info["memory_total_bytes"] and info["logical_cpus"] and info["cpu_model"]
    assert "lscpu" not in env.artifacts
    _unread_is_every_unknown(info)


# A NetBSD host as it answers: `uname` and `sysctl`, no /proc, no /sys, no os-release.
NETBSD_UNAME = {
    "-a": "NetBSD lookup 10.0 NetBSD 10.0 (GENERIC) #0: Thu Mar 28 08:33:33 UTC 2024  "
    "mkrepro@mkrepro.NetBSD.org:/usr/src/sys/arch/amd64/compile/GENERIC amd64",
    "-m": "amd64",
    "-n": "lookup",
    "-r": "10.0",
    "-s": "NetBSD",
}
NETBSD_SYSCTL = {
    "kern.hostname": "lookup",
    "kern.ostype": "NetBSD",
    "kern.osrelease": "10.0",
    "hw.machine": "amd64",
    "hw.machine_arch": "x86_64",
    "hw.model": "Intel 686-class",
    "machdep.cpu_brand": "AMD Ryzen 7 PRO 4750U with Radeon Graphics",
    "hw.ncpu": "3",
    "hw.ncpuonline": "3",
    "hw.physmem64": "1056833536",
    "hw.physmem": "1056833536",
}


class DirectoryHost:
    """A `Reader` of a host laid out in a directory: its files under ``root``, and
    the programs of ``root/bin`` as the only ones it can run (each really run)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read_file(self, path: str) -> bytes | None:
        try:
            return (self.root / path.lstrip("/")).read_bytes()
        except OSError:
            return None

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return os.listdir(self.root / path.lstrip("/"))
        except OSError:
            return None

    def query(self, argv: list[str], timeout: float) -> Queried | None:
        program = self.root / "bin" / argv[0]
        if "/" in argv[0] or not os.access(program, os.X_OK):
            return None  # not installed
        try:
            done = subprocess.run(
                [str(program), *argv[1:]],
                capture_output=True,
                timeout=timeout,
                env={"PATH": str(self.root / "bin")},
            )
        except subprocess.TimeoutExpired:
            return None
        return Queried(done.returncode, (done.stdout + done.stderr).decode())


def _netbsd(root: Path) -> DirectoryHost:
    """A NetBSD host's answers: shell scripts that use only the shell's built-ins."""
    (root / "bin").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc" / "sysctl.txt").write_text(
        "".join(f"{k} = {v}\n" for k, v in NETBSD_SYSCTL.items())
    )
    uname_cases = "".join(f"  {flag}) echo '{text}';;\n" for flag, text in NETBSD_UNAME.items())
    scripts = {
        "uname": f'case "${{1:--s}}" in\n{uname_cases}  *) exit 1;;\nesac\n',
        # NetBSD's sysctl: `name = value` per known name, an error line per unknown one
        "sysctl": (
            "status=0\nfor name; do\n  found=\n"
            "  while read -r key eq value; do\n"
            '    [ "$key" = "$name" ] && { echo "$key = $value"; found=1; }\n'
            f"  done < {root}/etc/sysctl.txt\n"
            '  [ -n "$found" ] || { echo "sysctl: \'$name\' is invalid" >&2; status=1; }\n'
            'done\nexit "$status"\n'
        ),
    }
    for name, body in scripts.items():
        (root / "bin" / name).write_text("#!/bin/sh\n" + body)
        (root / "bin" / name).chmod(0o755)
    return DirectoryHost(root)


def test_a_netbsd_host_is_described_by_uname_and_sysctl(tmp_path):
    host = _netbsd(tmp_path / "netbsd")
    assert isinstance(host, Reader)
    assert host.read_file("/proc/cpuinfo") is None and host.query(["lscpu"], 5) is None
    env = capture(host, tools=["memcached", "python3"])
    info = env.info
    assert info["hostname"] == "lookup"
    assert info["architecture"] == "amd64"
    assert info["kernel"] == NETBSD_UNAME["-a"]
    assert info["kernel_release"] == "10.0"
    assert info["os"] == "NetBSD 10.0"
    assert info["cpu_model"] == "AMD Ryzen 7 PRO 4750U with Radeon Graphics"
    assert info["logical_cpus"] == 3
    assert info["memory_total_bytes"] == 1056833536
    assert "kern.hostname = lookup" in env.artifacts["sysctl"].decode()
    # never this machine's facts
    assert "python_version" not in info and "perflab_version" not in info
    assert info["tools"] == {"memcached": None, "python3": None}
    # what it could not read, named: /proc's and /sys's facts
    _unread_is_every_unknown(info)
    for key in ("swap_devices", "boot_cmdline", "transparent_hugepages", "cpu_topology"):
        assert key in info["unread"]
    for key in ("hostname", "kernel", "cpu_model", "memory_total_bytes"):
        assert key not in info["unread"]


def test_the_controllers_python_and_perflab_are_in_its_record_only(tmp_path):
    with start_sshd() as srv:
        spec = write_spec(tmp_path, srv.one_phase_spec())
        db = tmp_path / "p.db"
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
        assert r.code == 0, r.err
    with Database(db) as s:
        records = s.environments(1)
    device = records.pop("dut")
    [controller] = records.values()
    assert controller["python_version"] == platform.python_version()
    assert controller["perflab_version"] == _version.__version__
    assert "python_version" not in device and "perflab_version" not in device
    assert device["kernel_release"]  # the device's own facts are there
    _unread_is_every_unknown(device)
