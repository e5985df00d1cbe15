"""The emulated device lab itself (tests/lab.py, scripts/lab/, docs/lab.md): each real
kernel boots and answers over SSH, the router is the minimal device the experiments need
(busybox without nohup, dropbear, memcached reachable through a forwarded port), a
panicking and a hanging boot show on the console and never answer, and no QEMU is left
behind. One VM at a time."""

from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest
from lab import LOOPBACK, VM, Lab, lab_fixture, pid_gone, start_vm  # noqa: F401 -- the `lab` fixture

pytestmark = pytest.mark.slow

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def kernel_of(lab: Lab, machine: str, index: int) -> str:
    kernels = lab.kernels(machine)
    assert len(set(kernels)) == 2, f"the lab's {machine} should have two kernels: {kernels}"
    return kernels[index]


def memcached_version(port: int, timeout_s: float = 20.0) -> str:
    """memcached's `version` answer on 127.0.0.1:port, polled until it answers."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=2.0) as s:
                s.settimeout(5.0)
                s.sendall(b"version\r\n")
                reply = s.recv(256).decode(errors="replace")
                if reply.startswith("VERSION "):
                    return reply.strip()
                last = reply
        except OSError as e:
            last = str(e)
        time.sleep(0.1)
    raise AssertionError(f"memcached did not answer `version` on port {port}: {last!r}")


@pytest.mark.parametrize("index", [0, 1])
def test_router_boots_its_kernel_and_serves_memcached(lab, index):
    kernel = kernel_of(lab, "router", index)
    with start_vm("router", kernel, forwards=[11211]) as vm:
        print(f"router {kernel}: SSH after {vm.boot_seconds:.1f} s")
        assert vm.run("uname -r").stdout.strip() == kernel
        assert vm.run("uname -m").stdout.strip() == "mips"
        boot_id = vm.run("cat /proc/sys/kernel/random/boot_id").stdout.strip()
        assert UUID.match(boot_id), boot_id
        # Like OpenWrt: busybox's shell and no nohup, no scp/sftp, no Python.
        missing = vm.run(
            "for p in nohup scp sftp-server python3 python; do command -v $p; done; "
            "ls /usr/lib/openssh/sftp-server /usr/libexec/sftp-server 2>&1",
            check=False,
        )
        assert "nohup" not in missing.stdout and "python" not in missing.stdout, missing.stdout
        assert vm.run("readlink /bin/sh").stdout.strip() == "/bin/busybox"
        # MGLRU is built in and off (the MGLRU experiment switches it).
        assert vm.run("cat /sys/kernel/mm/lru_gen/enabled").stdout.strip() == "0x0000"
        assert "zram0" in vm.run("cat /proc/swaps").stdout
        # memcached on the device, reached from this machine through the forwarded port.
        vm.run("memcached -u root -d -l 0.0.0.0 -p 11211 -m 32")
        assert memcached_version(vm.forwarded[11211]).startswith("VERSION 1.")
        assert "perflab-lab: ssh: starting dropbear" in vm.console
        # A reboot in the guest ends QEMU (scripts/lab/vm --reboot exit, the default).
        vm.run("reboot", check=False)
        assert vm.wait_exit(60) == 0, vm.console_tail()
        pid = vm.pid
    assert pid_gone(pid)


@pytest.mark.parametrize("index", [0, 1])
def test_x86_boots_its_kernel_without_libgcc_s(lab, index):
    kernel = kernel_of(lab, "x86", index)
    with start_vm("x86", kernel) as vm:
        print(f"x86 {kernel}: SSH after {vm.boot_seconds:.1f} s")
        assert vm.run("uname -r").stdout.strip() == kernel
        assert vm.run("uname -m").stdout.strip() == "x86_64"
        assert UUID.match(vm.run("cat /proc/sys/kernel/random/boot_id").stdout.strip())
        found = vm.run("find / -xdev -name 'libgcc_s*'", check=False).stdout
        assert found.strip() == "", found
        assert vm.run("command -v nohup", check=False).returncode != 0
        pid = vm.pid
        assert not pid_gone(pid)
    assert pid_gone(pid)


def test_with_reboot_reset_a_guest_reboot_boots_the_same_kernel_again(lab):
    with start_vm("router", reboot="reset") as vm:
        first = vm.run("cat /proc/sys/kernel/random/boot_id").stdout.strip()
        vm.run("reboot", check=False)
        deadline = time.monotonic() + 90
        while vm.console.count("perflab-lab: ssh: starting dropbear") < 2:
            assert vm.alive() and time.monotonic() < deadline, vm.console_tail()
            time.sleep(0.1)
        vm.wait_ssh()
        assert vm.run("uname -r").stdout.strip() == vm.kernel
        second = vm.run("cat /proc/sys/kernel/random/boot_id").stdout.strip()
        assert UUID.match(second) and second != first
        pid = vm.pid
    assert pid_gone(pid)


def test_a_kernel_that_panics_shows_on_the_console_and_never_answers(lab):
    with start_vm("router", cmdline="rdinit=/nonexistent", wait_ssh=False) as vm:
        answered = False
        deadline = time.monotonic() + 90
        while vm.alive() and time.monotonic() < deadline:
            answered = answered or vm.ssh_banner()
            time.sleep(0.2)
        # panic=-1 and -no-reboot: the panic ends QEMU at once, with status 0.
        assert vm.wait_exit(0) == 0, f"QEMU still running after 90 s:\n{vm.console_tail()}"
        assert not answered
        assert "Kernel panic - not syncing" in vm.console, vm.console_tail()
        pid = vm.pid
    assert pid_gone(pid)


def test_a_boot_that_hangs_shows_on_the_console_and_never_answers(lab):
    with start_vm("router", cmdline="perflab.hang=1", wait_ssh=False) as vm:
        vm.wait_console("perflab.hang=1: hanging before networking")
        # A normal boot has SSH up well within a second of this point.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            assert not vm.ssh_banner(), vm.console_tail()
            time.sleep(0.2)
        assert vm.alive()
        pid = vm.pid
    assert pid_gone(pid)


def test_vm_script_refuses_an_unknown_kernel(lab):
    proc = subprocess.run(
        [str(VM), "--machine", "router", "--kernel", "9.9.9-nope"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "no kernel '9.9.9-nope' for router; built: " in proc.stderr
    assert lab.kernels("router")[0] in proc.stderr
    listed = subprocess.run([str(VM), "--list"], capture_output=True, text=True, check=True).stdout
    assert all(k in listed for m in ("router", "x86") for k in lab.kernels(m))
