"""A local pool of two of the lab's emulated MIPS routers (`[hosts.router] pool = 2`): real
Debian kernels in QEMU, each forwarded on its own port of 127.0.0.1 (``PREFIX{slot}``),
booted from here by one control command with ``{slot}`` in it.

One experiment over the pool uses both devices side by side, keeps every block whole on
one device and records each run's device; one device killed mid-experiment (its QEMU gone,
its next boot refused) is set aside, and the experiment completes on the other, nothing
lost. The same two routers lent by a real labgrid coordinator as two places, each with a
power port (a switch starting its VM) and a console: ``labgrid = "router-*"`` acquires
both, boots each through labgrid's power driver, runs on both, and releases both. Alone
in `make test`: two VMs take both cores.
"""

from __future__ import annotations

import os
import signal
import socket
from collections import defaultdict

from cli_helpers import perflab, perflab_process, runs_seen
from lab import VM, lab_fixture, ssh_options, vm_argv  # noqa: F401  (fixture `lab`)
from labgrid_helpers import Pdu, start_lab
from perflab.store import Database
from proc_helpers import wait_until
from servers import LOOPBACK, free_port

K47 = "6.1.0-47-4kc-malta"
RUNS = 8  # 2 variants × 4 repetitions, interleaved: 4 blocks


def _slot_ports() -> str:
    """A port prefix P with P0 and P1 free on 127.0.0.1 (the pool's ``P{slot}``)."""
    for prefix in range(2400, 6500, 7):
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", prefix * 10))
                b.bind(("127.0.0.1", prefix * 10 + 1))
        except OSError:
            continue
        return str(prefix)
    raise AssertionError("no two neighbouring free ports")


def _spec(lab, prefix: str, dead: str, sleep: float) -> str:
    boot = (
        f"test ! -e {dead}{{slot}} && exec {VM} --machine router --kernel {{kernel}} "
        f"--cmdline {{cmdline}} --ssh-port {prefix}{{slot}} --console stdio"
    )
    opts = ", ".join(f'"{o}"' for o in ssh_options(lab, "router"))
    return f"""\
name = "router-pool"
baseline = "a"
repetitions = 4
order = "interleaved"
timeout = "3m"

[hosts.router]
ssh = "root@127.0.0.1:{prefix}{{slot}}"
identity = "{lab.identity}"
options = [{opts}]
boot_timeout = "90s"
kernel = "{K47}"
pool = 2
[hosts.router.control]
boot = '{boot}'

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "router"
command = "cat /proc/sys/kernel/random/boot_id; sleep {sleep}"

[[metric]]
name = "wall_time"
phase = "p"
better = "lower"
"""


def _vms(prefix: str) -> list[int]:
    """PIDs of this test's QEMU processes (forwarding 127.0.0.1:PREFIX0 or PREFIX1)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read()
        except OSError:
            continue
        if b"qemu-system" in cmd and f"127.0.0.1:{prefix}".encode() in cmd:
            found.append(int(p))
    return found


def _runs(db):
    with Database(db) as s:
        return [(r, s.artifact(1, "stdout:phase:p", r.id)) for r in s.runs(1)]


def _ok_on(db, device: str) -> int:
    return runs_seen(db).count(("ok", device))


def test_two_routers_share_the_blocks_each_whole_on_one(lab, tmp_path):
    prefix = _slot_ports()
    spec = tmp_path / "pool.toml"
    spec.write_text(_spec(lab, prefix, str(tmp_path / "dead"), 1.0))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs = _runs(db)
    assert [run.status for run, _ in runs] == ["ok"] * RUNS
    boots = defaultdict(set)
    blocks = defaultdict(set)
    for run, out in runs:
        boots[run.device].add(out.decode().split()[0])  # the boot id the run saw
        blocks[run.block].add(run.device)
    assert set(boots) == {"router[0]", "router[1]"}
    assert not boots["router[0]"] & boots["router[1]"]  # two machines, not one
    assert all(len(d) == 1 for d in blocks.values())
    assert not _vms(prefix)  # both powered off at the end


def test_a_router_killed_mid_experiment_is_set_aside_and_nothing_is_lost(lab, tmp_path):
    prefix = _slot_ports()
    dead = tmp_path / "dead"
    spec = tmp_path / "pool.toml"
    spec.write_text(_spec(lab, prefix, str(dead), 3.0))
    db = tmp_path / "p.db"
    p = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
    try:
        # both routers up and each through a run: then router[1] dies for good
        wait_until(lambda: _ok_on(db, "router[0]") and _ok_on(db, "router[1]"), timeout=300)
        (tmp_path / "dead1").write_text("")  # its boot command refuses from now on
        for pid in _vms(f"{prefix}1"):
            os.kill(pid, signal.SIGKILL)
        _, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert err.count("device router[1] set aside") == 1, err
    runs = _runs(db)
    assert [run.status for run, _ in runs] == ["ok"] * RUNS  # nothing lost
    assert {run.device for run, _ in runs} == {"router[0]", "router[1]"}
    assert max(run.attempts for run, _ in runs) <= 2  # at most the run in flight, again
    assert not _vms(prefix)


PLACES_SPEC = """\
name = "router-places"
baseline = "a"
repetitions = 2
order = "interleaved"
timeout = "3m"

[hosts.router]
labgrid = "router-*"
labgrid_coordinator = "{address}"
identity = "{identity}"
options = [{options}]
boot_timeout = "90s"

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "router"
command = "cat /proc/sys/kernel/random/boot_id; sleep 1"

[[metric]]
name = "wall_time"
phase = "p"
better = "lower"
"""


def test_two_routers_lent_as_two_labgrid_places_are_acquired_used_and_released(lab, tmp_path):
    env = {**os.environ, "PERFLAB_LAB_CACHE": str(lab.cache)}
    pdus, resources = [], {}
    try:
        for k in (1, 2):
            ssh_port, console_port = free_port(), free_port()
            argv = vm_argv("router", ssh_port=ssh_port, console=f"tcp:{console_port}")
            pdu = Pdu(argv, tmp_path / f"vm{k}.log", env)
            pdus.append(pdu)
            resources[f"router-{k}"] = {
                "NetworkService": {"address": LOOPBACK, "username": "root", "port": ssh_port},
                "NetworkSerialPort": {"host": LOOPBACK, "port": console_port, "protocol": "raw"},
                "NetworkPowerPort": {"model": "simplerest", "host": pdu.url, "index": 0},
            }
        with start_lab(resources) as grid:
            for place in resources:
                grid.create_place(place, place)
            opts = ", ".join(f'"{o}"' for o in ssh_options(lab, "router"))
            text = PLACES_SPEC.format(address=grid.address, identity=lab.identity, options=opts)
            spec = tmp_path / "places.toml"
            spec.write_text(text)
            db = tmp_path / "p.db"
            r = perflab("run", str(spec), "--store", str(db), "--no-compare")
            assert r.code == 0, r.err
            assert all(grid.holder(place) is None for place in resources)  # both released
        for pdu in pdus:  # each booted through labgrid's power driver, and off at the end
            assert pdu.events[-2:] == ["on", "off"] and not pdu.on, pdu.events
        runs = _runs(db)
        assert [run.status for run, _ in runs] == ["ok"] * 4
        boots = defaultdict(set)
        for run, out in runs:
            boots[run.device].add(out.decode().split()[0])
        assert set(boots) == {"router-1", "router-2"}
        assert not boots["router-1"] & boots["router-2"]  # two machines, not one
        with Database(db) as s:
            envs = s.environments(1)
        assert {envs[p]["labgrid"]["place"] for p in ("router-1", "router-2")} == set(resources)
        assert envs["router-2"]["architecture"] == "mips"
    finally:
        for pdu in pdus:
            pdu.stop()
