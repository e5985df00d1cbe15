"""Devices under test that are real kernels on emulated machines (the lab of docs/lab.md):
the MIPS router (QEMU Malta, busybox, dropbear, memcached; no Python, no nohup, no
sftp) and the x86_64 machine (busybox, dropbear, no libgcc_s), each booted by perflab
from this machine (``[hosts.NAME.control]``) into the kernel a variant names, its
console kept, its boots verified — through the real perflab CLI, whole experiments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import perflab
from lab import VM, lab_fixture, ssh_options, stop_perflab, vm_argv  # noqa: F401  (fixture `lab`)
from perflab.store import Database
from servers import free_port

pytestmark = pytest.mark.slow

K47, K50 = "6.1.0-47-4kc-malta", "6.1.0-50-4kc-malta"
POLL_S = 60.0


def _host(
    lab, machine: str, port: int, extra: str = "", forwards=(), boot_timeout="90s", count=False
) -> str:
    """The ``[hosts.MACHINE]`` tables of a lab machine booted from here; ``count``: its
    instructions counted (the control's ``counters``)."""
    boot = " ".join(
        vm_argv(
            machine, "{kernel}", cmdline="{cmdline}", ssh_port=port, forwards=forwards, count=count
        )
    )
    opts = ", ".join(f'"{o}"' for o in ssh_options(lab, machine))
    counters = (
        f"counters = '{VM} --machine {machine} --ssh-port {port} --counters'\n" if count else ""
    )
    return (
        f'[hosts.{machine}]\nssh = "root@127.0.0.1:{port}"\nidentity = "{lab.identity}"\n'
        f'options = [{opts}]\nboot_timeout = "{boot_timeout}"\n{extra}'
        f"[hosts.{machine}.control]\nboot = '{boot}'\n{counters}"
    )


def _router_spec(
    lab, port: int, name: str, variants: dict[str, str | None], head: str = "", **host
) -> str:
    """An experiment on the router: ``variants`` name → its kernel's command line (None:
    none), the first the baseline, each on 6.1.0-47 but the last on 6.1.0-50 when there
    are two; one phase on the router (``uname -r``), its wall time the metric."""
    kernels = [K47, K50] if len(variants) == 2 else [K47] * len(variants)
    blocks = "".join(
        f'[[variant]]\nname = "{v}"\non = "router"\nkernel = "{k}"\n'
        + (f'cmdline = "{c}"\n' if c else "")
        for (v, c), k in zip(variants.items(), kernels)
    )
    return (
        f'name = "{name}"\nbaseline = "{next(iter(variants))}"\nrepetitions = 1\n{head}\n'
        f"{_host(lab, 'router', port, **host)}{blocks}"
        '[[phase]]\nname = "p"\non = "router"\ncommand = "uname -r"\n'
        '[[metric]]\nname = "wall_time"\nphase = "p"\nbetter = "lower"\n'
    )


def _vms(port: int) -> list[int]:
    """PIDs of QEMU processes forwarding ``port`` (this test's VMs)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes()
        except OSError:
            continue
        if b"qemu-system" in cmd and f"127.0.0.1:{port}-".encode() in cmd:
            found.append(int(p.name))
    return found


def _until(predicate, what: str, timeout: float = POLL_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting until {what}")


def _runs(db: Path) -> list[tuple[object, dict[str, bytes]]]:
    with Database(db) as s:
        out = []
        for run in s.runs(1):
            names = [n for n, _ in s.artifact_names(1, run.id)]
            out.append((run, {n: s.artifact(1, n, run.id) for n in names}))
        return out


def test_the_mips_router_boots_each_variants_real_kernel_and_serves_the_load(lab, tmp_path):
    port, mc = free_port(), free_port()
    spec = tmp_path / "router.toml"
    spec.write_text(
        f"""\
name = "router-kernels"
baseline = "k47"
repetitions = 2
timeout = "3m"
tools = ["memcached"]

{_host(lab, "router", port, forwards=[(mc, 11211)], count=True)}
[[variant]]
name = "k47"
on = "router"
kernel = "{K47}"
[[variant]]
name = "k50"
on = "router"
kernel = "{K50}"

[[service]]
name = "memcached"
on = "router"
port = 11211
command = "memcached -u root -l 0.0.0.0 -p 11211 -m 16 -t 1"
ready = "tcp://127.0.0.1:{mc}"

[[phase]]
name = "free"
on = "router"
command = "grep MemFree /proc/meminfo"

[[phase]]
name = "load"
counters = ["instructions"]
counters_on = "router"
[phase.kv]
server = "127.0.0.1:{mc}"
protocol = "memcache_text"
requests = 500
clients = 2
threads = 1
ratio = "1:1"
key_max = 1000
data_size = 64

[[metric]]
name = "mem_free_kb"
phase = "free"
better = "higher"
regex = 'MemFree: *(?P<value>[0-9]+)'
[[metric]]
name = "ops_per_sec"
better = "higher"
[[metric]]
name = "instructions_per_op"
better = "lower"
counter = "instructions"
scale = 0.001
"""
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    # a MIPS host: the shim is not for it, and perflab says so once, with the cause
    assert r.err.count("steps measured by the portable sh path") == 1, r.err
    assert "the host is mips, perflab-exec is built for" in r.err
    runs = _runs(db)
    assert len(runs) == 4 and {run.status for run, _ in runs} == {"ok"}
    kernels = {K47: set(), K50: set()}
    for run, art in runs:
        host, kernel, boot_id, _ = art["kernel"].decode().strip().split("\t")
        assert host == "router" and kernel == (K47 if run.variant == "k47" else K50)
        kernels[kernel].add(boot_id)
        steps = json.loads(art["commands"])
        on_router = [s for s in steps if s["host"] == "router"]
        assert on_router and all(s["measured_by"].startswith("sh (") for s in on_router)
        assert "console:router" in art  # every run keeps what its console said
    # each kernel was booted, and a boot is never shared by two kernels
    assert all(kernels.values()) and not kernels[K47] & kernels[K50]
    consoles = b"".join(art["console:router"] for _, art in runs)
    assert f"Linux version {K47}".encode() in consoles
    assert f"Linux version {K50}".encode() in consoles
    with Database(db) as s:
        values = {(run_id, m): v for run_id, m, v in s.metrics(1)}
    assert sum(1 for (_, m), v in values.items() if m == "ops_per_sec" and v > 0) == 4
    assert sum(1 for (_, m), v in values.items() if m == "mem_free_kb" and v > 1000) == 4
    # QEMU counted the router's instructions over each run's 1,000 requests: the kernel's
    # and memcached's work per request, thousands of instructions (never 0: a count that
    # did not move, nor a count of the whole boot, billions)
    per_op = [v for (_, m), v in values.items() if m == "instructions_per_op"]
    assert len(per_op) == 4 and all(2_000 < v < 1_000_000 for v in per_op), per_op
    assert not _vms(port)  # the experiment's end powered the router off


def test_an_x86_machine_without_libgcc_is_reset_before_every_run(lab, tmp_path):
    port = free_port()
    kernel = lab.kernels("x86")[0]
    spec = tmp_path / "x86.toml"
    host = _host(lab, "x86", port, extra=f'reset = "each-run"\nkernel = "{kernel}"\n')
    spec.write_text(
        f"""\
name = "x86-reset"
baseline = "a"
repetitions = 2
timeout = "3m"

{host}
[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "x86"
command = "ls /lib/*/libgcc_s* /usr/lib/*/libgcc_s* 2>/dev/null; cat /proc/sys/kernel/random/boot_id"

[[metric]]
name = "wall_time"
phase = "p"
better = "lower"
[[metric]]
name = "max_rss"
phase = "p"
better = "lower"
"""
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs = _runs(db)
    boot_ids = []
    for run, art in runs:
        assert run.status == "ok"
        host, booted, boot_id, _ = art["kernel"].decode().strip().split("\t")
        assert (host, booted) == ("x86", kernel)
        out = art["stdout:phase:p"].decode().split()
        assert out == [boot_id]  # no libgcc_s there, and the step ran on that very boot
        boot_ids.append(boot_id)
        (step,) = json.loads(art["commands"])
        # the static shim runs on a userland without libgcc_s: max RSS is measured there
        assert step["measured_by"] == "perflab-exec"
    assert len(set(boot_ids)) == len(runs) == 4  # a fresh boot before every run
    with Database(db) as s:
        rss = [v for _, m, v in s.metrics(1) if m == "max_rss"]
    assert len(rss) == 4 and all(v > 0 for v in rss)
    assert not _vms(port)


def test_a_kernel_that_panics_or_hangs_fails_its_runs_with_the_consoles_line(lab, tmp_path):
    port = free_port()
    spec = tmp_path / "bad.toml"
    spec.write_text(
        _router_spec(
            lab,
            port,
            "bad-kernels",
            {"good": None, "panics": "rdinit=/nonexistent", "hangs": "perflab.hang=1"},
            head="max_failures = 10",
            boot_timeout="30s",
        )
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1, r.err  # runs failed; the experiment finished
    by_variant = {run.variant: (run, art) for run, art in _runs(db)}
    assert by_variant["good"][0].status == "ok"
    panic_run, panic_art = by_variant["panics"]
    assert panic_run.status == "failed", panic_run.reason
    # failed at once, by the console's own line (the hang below waits its 30 s out)
    assert "host 'router': the kernel panicked: " in panic_run.reason
    assert "Kernel panic - not syncing: " in panic_run.reason
    assert b"Kernel panic - not syncing" in panic_art["console:router"]
    hang_run, hang_art = by_variant["hangs"]
    assert hang_run.status == "failed"
    assert "host 'router' did not answer within 30 s" in hang_run.reason, hang_run.reason
    assert "perflab.hang=1: hanging before networking" in hang_run.reason
    assert b"perflab.hang=1" in hang_art["console:router"]
    with Database(db) as s:  # nothing measured on a kernel that never came up
        assert {run_id for run_id, _, _ in s.metrics(1)} == {by_variant["good"][0].id}
    assert not _vms(port)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_perflab_stopped_mid_boot_leaves_no_vm_and_resume_finishes(lab, tmp_path, sig):
    """Killed outright (no handler of perflab's runs) or Ctrl-C (the boot's wait ends on
    the stop request, exit 130): no VM is left, and --resume finishes the experiment."""
    port = free_port()
    spec = tmp_path / "kill.toml"
    spec.write_text(_router_spec(lab, port, "killed-mid-boot", {"a": None, "b": None}))
    db = tmp_path / "p.db"
    cli = [sys.executable, "-m", "perflab", "run", str(spec), "--store", str(db), "--no-compare"]
    proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _until(lambda: _vms(port), "perflab starts the router's VM")
    finally:
        stop_perflab(proc, sig)  # mid-boot
    _until(lambda: not _vms(port), "the stopped perflab's VM is gone")
    with Database(db) as s:  # nothing ran: the run in flight is pending again
        assert {run.status for run in s.runs(1)} <= {"pending", "running"}
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs = _runs(db)
    assert len(runs) == 2 and {run.status for run, _ in runs} == {"ok"}
    assert {art["kernel"].decode().split("\t")[1] for _, art in runs} == {K47, K50}
    assert not _vms(port)


def test_ctrl_c_ends_a_boot_that_hangs_at_once(lab, tmp_path):
    """A device whose boot never answers, with an hour to do so: Ctrl-C ends the wait (the
    test finishing at all shows it; a boot that ignored the stop request would take the
    hour), exit 130, no VM left."""
    port = free_port()
    spec = tmp_path / "hang.toml"
    hang = "perflab.hang=1"
    spec.write_text(
        _router_spec(lab, port, "hanging-boot", {"a": hang, "b": hang}, boot_timeout="1h")
    )
    cli = [sys.executable, "-m", "perflab", "run", str(spec), "--store", str(tmp_path / "p.db")]
    proc = subprocess.Popen(
        [*cli, "--no-compare"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _until(lambda: _vms(port), "perflab starts the router's VM")
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    _until(lambda: not _vms(port), "the VM of the stopped boot is gone")
