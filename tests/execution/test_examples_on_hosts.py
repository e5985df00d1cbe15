"""The two-machine examples run end to end, pointed at loopback "machines" (real sshd
servers on 127.0.0.1) and scaled down: the MGLRU experiment with its DUT booted into each
variant's kernel (a host whose kernel can be switched, see `sshd.start_sshd(kernel=...)`)
and its load from the ATE; the memcached instance sweep with its server on one host and
the load from two client hosts. Each example is edited only where a user would point it at
their machines (hosts, addresses, sizes): every edit is checked to have applied, so a
change to the examples that these tests do not follow fails here."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from cli_helpers import perflab
from perflab.store import Database
from perflab.workloads.kv_result import KvResult
from sshd import start_sshd

pytestmark = pytest.mark.server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def edited(name: str, edits: list[tuple[str, str]]) -> str:
    text = (EXAMPLES / name).read_text()
    for old, new in edits:
        assert old in text, f"{name} no longer has {old!r}: update this test with it"
        text = text.replace(old, new)
    return text


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive TCP ports free on 127.0.0.1 now."""
    for base in range(20000, 60000, 97):
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports")


def test_mglru_two_machines_boots_each_kernel_and_loads_from_the_ate(tmp_path):
    with start_sshd(kernel="6.0.0-rc3") as dut, start_sshd() as ate:
        port = free_ports(1)
        text = edited(
            "mglru-memcached-dut.toml",
            [
                ('ssh = "root@dut"\n', dut.host_table()),
                (
                    'boot = "kexec -l /boot/vmlinuz-{kernel} --reuse-cmdline && kexec -e"',
                    f'boot = "{dut.boot_command}"',
                ),
                ('boot_timeout = "10m"', 'boot_timeout = "30s"'),
                ('ssh = "bench@ate"\n', ate.host_table()),
                ("repetitions = 10", "repetitions = 2"),
                ('timeout = "40m"', 'timeout = "2m"'),
                ('dut_address = "dut"', 'dut_address = "127.0.0.1"'),
                ("memory_mib = 6400", "memory_mib = 16"),
                ('access_time = "20m"', 'access_time = "0.3s"'),
                ('"~90%" = 1600000, "~110%" = 2000000', '"~90%" = 2000, "~110%" = 16000'),
                ("port = 11211", f"port = {port}"),
                ("-l 0.0.0.0", "-l 127.0.0.1"),
                ("-u memcached", "-u $(id -un)"),
            ],
        )
        spec = tmp_path / "mglru-dut.toml"
        spec.write_text(text)
        db = tmp_path / "p.db"
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
        assert r.code == 0, r.err
        assert "host 'dut' booted" in r.err  # the DUT started on the baseline's kernel
        kernels = {"baseline": "6.0.0-rc3", "mglru": "6.0.0-rc3-mglru"}
        with Database(db) as s:
            runs = s.runs(1)
            assert len(runs) == 8 and {x.status for x in runs} == {"ok"}
            boot_ids = set()
            for run in runs:
                host, kernel, boot_id, _ = s.artifact(1, "kernel", run.id).decode().split("\t")
                assert (host, kernel) == ("dut", kernels[run.variant])
                boot_ids.add(boot_id)
                placed = s.artifact(1, "hosts", run.id).decode()
                assert "phase:populate@ate" in placed and "phase:access@ate" in placed
                access = KvResult(json.loads(s.artifact(1, "kv:access", run.id)))
                assert access.metrics()["requests"] > 0 and access.errors.total == 0
            assert len(boot_ids) >= 2  # booted at least once into the other kernel
            assert {"dut", "ate"} <= set(s.environments(1))
        shown = perflab("compare", "1", "--store", str(db))
        assert shown.code == 0 and "mglru vs baseline" in shown.out


def test_instance_sweep_spreads_two_clients_over_every_instance(tmp_path):
    with start_sshd() as server, start_sshd() as c1, start_sshd() as c2:
        port = free_ports(3)
        text = edited(
            "memcached-instance-sweep.toml",
            [
                ('ssh = "root@server"\n', server.host_table()),
                ('ssh = "bench@client1"\n', c1.host_table()),
                ('ssh = "bench@client2"\n', c2.host_table()),
                ("repetitions = 5", "repetitions = 2"),
                ('server_address = "server"', 'server_address = "127.0.0.1"'),
                ("first_port = 11211", f"first_port = {port}"),
                ("port = 11211", f"port = {port}"),
                ('test_time = "30s"', 'test_time = "0.3s"'),
                ("connections = 50", "connections = 3"),
                ("client_threads = 4", "client_threads = 1"),
                ("instances = [1, 2, 4, 8, 14, 28]", "instances = [1, 3]"),
                ('LAUNCHER = "onload --profile=latency"', 'LAUNCHER = "nice -n 0"'),
                ("-l 0.0.0.0", "-l 127.0.0.1"),
                ("-m 1024 -c 200000", "-m 16 -c 1024"),
                ("-u memcached", "-u $(id -un)"),
            ],
        )
        spec = tmp_path / "sweep.toml"
        spec.write_text(text)
        db = tmp_path / "p.db"
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
        assert r.code == 0, r.err
        with Database(db) as s:
            runs = s.runs(1)
            assert len(runs) == 8 and {x.status for x in runs} == {"ok"}
            for run in runs:
                instances = int(run.cell["instances"])
                get = KvResult(json.loads(s.artifact(1, "kv:get", run.id)))
                doc = get.to_json()
                # two clients × 1 thread × 3 connections, spread over every instance
                assert get.metrics()["connections"] == 6
                assert len(doc["servers"]) == instances
                assert all(x["requests"] > 0 for x in doc["servers"]), doc["servers"]
                for name in ("get@client1#1", "get@client2#1"):
                    assert s.artifact(1, f"kv:{name}", run.id) is not None
        shown = perflab("compare", "1", "--store", str(db))
        assert shown.code == 0, shown.err
        assert "geometric mean" in shown.out
