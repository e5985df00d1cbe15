"""Why it changed, on the device: the lab's MIPS router (QEMU Malta, busybox, dropbear,
memcached; reached by the portable sh path) booted by perflab with its perf disk, while
the load comes from here. One experiment, two runs on one boot:

* a command on the router profiled alone (``profile = "process"``), and a kv phase
  profiled system-wide on the router (``profile_on``): perf records there,
  `perf script` runs there, the stacks are folded here — kernel frames with their names
  (the router's /proc/kallsyms), and memcached's user-space samples kept as their leaf
  (a MIPS kernel records no user call chains);
* a monitor sampled on the router through the sh path, PSI switched off on its kernel
  command line: the missing source is said once for the two runs, the others stored;
* the router's environment and system checks, as for any host (architecture, kernel,
  memory, zram swap; an unknown says what the router lacks), and `perflab check
  SPEC --host router` run while the router is up.
"""

from __future__ import annotations

import gzip
import json
import sys

import pytest
from cli_helpers import perflab
from lab import lab_fixture, ssh_options, vm_argv  # noqa: F401  (fixture `lab`)
from perflab.observe.folded import parse_folded
from perflab.observe.monitors import MonitorSeries
from perflab.store import Database
from servers import free_port

pytestmark = pytest.mark.slow

K47 = "6.1.0-47-4kc-malta"


def _spec(lab, tmp_path, port: int, mc: int) -> str:
    boot = " ".join(
        vm_argv(
            "router",
            "{kernel}",
            cmdline="{cmdline}",
            ssh_port=port,
            forwards=[(mc, 11211)],
            perf=True,
        )
    )
    opts = ", ".join(f'"{o}"' for o in ssh_options(lab, "router"))
    check = tmp_path / "check.json"
    return f"""\
name = "router-why"
baseline = "k47"
repetitions = 2
timeout = "4m"
tools = ["memcached", "perf"]

[hosts.router]
ssh = "root@127.0.0.1:{port}"
identity = "{lab.identity}"
options = [{opts}]
boot_timeout = "90s"
[hosts.router.control]
boot = '{boot}'

[[variant]]
name = "k47"
on = "router"
kernel = "{K47}"
cmdline = "psi=0"

[[service]]
name = "memcached"
on = "router"
port = 11211
command = "memcached -u root -l 0.0.0.0 -p 11211 -m 32 -t 1"
ready = "tcp://127.0.0.1:{mc}"

[[phase]]
name = "fill"
measure = false
kv = {{ server = "127.0.0.1:{mc}", protocol = "memcache_binary", requests = "allkeys", ratio = "1:0", key_max = 5000, data_size = 500, key_pattern = "P:P", pipeline = 8, clients = 1, threads = 1 }}

[[phase]]
name = "access"
profile = "system"
profile_on = "router"
monitor = {{ interval = "250ms", sources = ["vmstat", "psi", "meminfo"], on = "router" }}
kv = {{ server = "127.0.0.1:{mc}", protocol = "memcache_binary", test_time = "3s", ratio = "0:1", key_max = 5000, key_pattern = "G:G", pipeline = 8, clients = 1, threads = 1 }}

# a command on the router, its own process tree sampled there
[[phase]]
name = "spin"
on = "router"
measure = false
profile = "process"
command = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; cat /proc/meminfo > /dev/null"

# the router's checks read from here while it is up, as a user would
[[phase]]
name = "check"
measure = false
command = "{sys.executable} -m perflab check {{spec_path}} --host router --json > {check}; test $? -le 1"

[[metric]]
name = "ops_per_sec"
phase = "access"
better = "higher"
"""


@pytest.fixture(scope="module")
def experiment(lab, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("device-observe")
    spec = tmp / "router-why.toml"
    spec.write_text(_spec(lab, tmp, free_port(), free_port()).replace("{spec_path}", str(spec)))
    db = tmp / "why.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    return tmp, db, r


def _artifacts(db) -> list[dict[str, bytes]]:
    with Database(db) as s:
        runs = s.runs(1)
        assert [run.status for run in runs] == ["ok", "ok"]
        return [
            {n: s.artifact(1, n, run.id) for n, _ in s.artifact_names(1, run.id)} for run in runs
        ]


def test_the_routers_profile_has_its_kernel_frames_and_memcacheds_samples(experiment):
    _, db, _ = experiment
    for art in _artifacts(db):
        info = json.loads(art["profile-info:access"])
        assert (info["host"], info["mode"], info["event"]) == ("router", "system", "cpu-clock")
        assert info["kernel"] is True
        stacks = parse_folded(gzip.decompress(art["profile:access"]).decode())
        assert sum(stacks.values()) == info["samples"] > 500
        # kernel frames named from the router's kallsyms: its network driver and TCP
        frames = {f for stack in stacks for f in stack.split(";")[1:]}
        assert "pcnet32_start_xmit_[k]" in frames, sorted(frames)[:40]
        assert any(f.startswith("tcp_") and f.endswith("_[k]") for f in frames)
        # memcached's worker thread was sampled, in the kernel and in its own code
        worker = {s: n for s, n in stacks.items() if s.split(";")[0] == "mc-worker"}
        assert worker and any(s.endswith("_[k]") for s in worker)
        user_leaves = [s for s in worker if not s.endswith("_[k]")]
        assert user_leaves, sorted(worker)[:20]
        # samples in user space had no call chain on MIPS: each kept as its leaf alone
        assert info["leaf_only"] > 0
        assert all(s.count(";") == 1 for s in user_leaves)


def test_a_command_on_the_router_is_profiled_alone_there(experiment):
    _, db, _ = experiment
    for art in _artifacts(db):
        info = json.loads(art["profile-info:spin"])
        assert (info["host"], info["mode"]) == ("router", "process")
        stacks = parse_folded(gzip.decompress(art["profile:spin"]).decode())
        comms = {stack.split(";")[0] for stack in stacks}
        # its own process tree only: the shell's loop (and the cat it starts); no memcached
        assert "sh" in comms and not comms & {"mc-worker", "memcached", "swapper"}, comms
        assert sum(n for s, n in stacks.items() if s.startswith("sh;")) > 50
        assert any(s.endswith("_[k]") for s in stacks), sorted(stacks)  # its kernel work


def test_a_monitor_on_the_router_is_stored_and_what_its_kernel_lacks_said_once(experiment):
    _, db, r = experiment
    for art in _artifacts(db):
        series = MonitorSeries.from_bytes(art["monitor:access"])
        assert series.host == "router"
        free = [v["nr_free_pages"] for _, v in series.values("vmstat")]
        assert len(free) >= 3 and all(x > 0 for x in free)
        assert next(v["MemTotal_kib"] for _, v in series.values("meminfo")) > 100 * 1024
        assert not series.values("psi")  # psi=0 on the router's command line
        assert any(m.startswith("psi: /proc/pressure/") for m in series.missing)
    # two runs, each without PSI: said once, with the host, not an error per run
    said = [line for line in r.err.splitlines() if "monitor on host router: psi" in line]
    assert len(said) == len({*said}) >= 1, r.err
    assert len([x for x in said if "/proc/pressure/memory" in x]) == 1, r.err


def test_the_routers_environment_and_checks_read_like_any_hosts(experiment):
    tmp, db, _ = experiment
    show = perflab("show", "1", "--store", str(db), "--json")
    assert show.code == 0, show.err
    env = json.loads(show.out)["environment"]["router"]
    assert (env["architecture"], env["kernel_release"]) == ("mips", K47)
    assert env["cpu_model"].startswith("MIPS 24Kc")
    assert 100 * 2**20 < env["memory_total_bytes"] < 128 * 2**20
    assert [d["name"] for d in env["swap_devices"]] == ["/dev/zram0"]
    assert env["tools"]["perf"].startswith("perf version 6.1")
    # the router's kernel has no THP: unknown, saying what it lacks
    text = perflab("show", "1", "--store", str(db))
    assert "unknown: no /sys/kernel/mm/transparent_hugepage" in text.out.replace("\n", " ")
    # perflab check --host router, run while it was up
    check = json.loads((tmp / "check.json").read_text())
    assert check["host"] == "router" and check["machine"]["architecture"] == "mips"
    checks = {c["name"]: c for c in check["checks"]}
    assert checks["memory"]["status"] == "ok" and checks["load"]["status"] != "unknown"
    assert checks["perf_event_paranoid"]["value"].endswith("(root)")
    # the experiment's snapshots of the router: none while it was down before its boot
    with Database(db) as s:
        names = [n for n, _ in s.artifact_names(1, None) if n.startswith("system/")]
        docs = [json.loads(s.artifact(1, n, None) or b"{}") for n in names]
    router = [d for d in docs if d["host"] == "router"]
    assert router and all(d["label"] != "start" for d in router)
    assert all({c["name"]: c for c in d["checks"]}["load"]["status"] != "unknown" for d in router)
