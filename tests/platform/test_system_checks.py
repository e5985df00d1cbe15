"""System checks (`perflab check`, platform/system_state.py), the snapshots recorded with
every experiment (execution/system_snapshots.py) and the comparison's warnings from them
(analysis/system_conditions.py): this machine's real /proc and /sys, made-up trees for the
warnings, the command's exit codes and JSON, and a real tiny experiment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import perflab, write_spec
from perflab.analysis.system_conditions import system_warnings
from perflab.execution.system_snapshots import SystemSnapshots
from perflab.hosts.local import LocalHost
from perflab.platform import system_state
from perflab.platform.system_state import (
    TITLES,
    TreeReader,
    read_system_state,
    sample_processes,
)
from perflab.records import RunRow
from perflab.store import Database

CPU = "sys/devices/system/cpu"


# -- made-up trees


def make_tree(
    root: Path,
    *,
    cpus: int = 2,
    governor: str | list[str] | None = "performance",
    no_turbo: str | None = "1",
    smt: str | None = "0",
    loadavg: str = "0.10 0.20 0.30 1/100 4242",
    throttle: tuple[int, int] | None = (0, 0),
    mem_total_kb: int = 8_000_000,
    mem_available_kb: int = 6_000_000,
    swap_total_kb: int = 0,
    swap_free_kb: int = 0,
    aslr: str = "2",
    paranoid: str = "2",
    procs: dict[int, tuple[str, int, int]] | None = None,
) -> Path:
    """A tree laid out like / with what the checks read."""

    def put(path: str, text: str) -> None:
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text + "\n")

    put(f"{CPU}/online", f"0-{cpus - 1}" if cpus > 1 else "0")
    governors = [governor] * cpus if isinstance(governor, str) else governor
    for cpu in range(cpus):
        if governors is not None:
            put(f"{CPU}/cpu{cpu}/cpufreq/scaling_governor", governors[cpu])
        if throttle is not None:
            put(f"{CPU}/cpu{cpu}/thermal_throttle/core_throttle_count", str(throttle[0]))
            put(f"{CPU}/cpu{cpu}/thermal_throttle/package_throttle_count", str(throttle[1]))
    if no_turbo is not None:
        put(f"{CPU}/intel_pstate/no_turbo", no_turbo)
    if smt is not None:
        put(f"{CPU}/smt/active", smt)
    put("proc/loadavg", loadavg)
    put(
        "proc/meminfo",
        f"MemTotal:       {mem_total_kb} kB\nMemFree:        1000 kB\n"
        f"MemAvailable:   {mem_available_kb} kB\nSwapTotal:      {swap_total_kb} kB\n"
        f"SwapFree:       {swap_free_kb} kB",
    )
    put("proc/sys/kernel/randomize_va_space", aslr)
    put("proc/sys/kernel/perf_event_paranoid", paranoid)
    for pid, (name, ppid, ticks) in (procs or {1: ("init", 0, 0)}).items():
        set_stat(root, pid, name, ppid, ticks)
    return root


def set_stat(root: Path, pid: int, name: str, ppid: int, ticks: int) -> None:
    """/proc/PID/stat with utime = ticks, stime = 0 (fields as the kernel writes them)."""
    p = root / "proc" / str(pid) / "stat"
    p.parent.mkdir(parents=True, exist_ok=True)
    rest = ["S", str(ppid), *["0"] * 9, str(ticks), "0", *["0"] * 10]
    p.write_text(f"{pid} ({name}) {' '.join(rest)}\n")


def state_of(root: Path, **kw) -> system_state.SystemState:
    """The checks of a made-up tree, its processes sampled without waiting."""
    return read_system_state(TreeReader(root), interval=0.0, wait=lambda s: None, **kw)


def by_name(state: system_state.SystemState) -> dict[str, system_state.Check]:
    return {c.name: c for c in state.checks}


# -- this machine


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def test_this_machine_every_check_is_typed_and_matches_the_files():
    before = Path("/proc/loadavg").read_text().split()
    checks = by_name(read_system_state())
    after = Path("/proc/loadavg").read_text().split()
    assert list(checks) == list(TITLES)
    for c in checks.values():
        assert c.status in ("ok", "warn", "unknown")
        if c.status != "ok":  # a warning says what to do; an unknown says why
            assert c.message
        json.dumps(c.to_json())
    load = checks["load"]
    assert load.status in ("ok", "warn")
    assert (load.data["load1"], load.data["load5"], load.data["load15"]) in (
        tuple(float(x) for x in before[:3]),
        tuple(float(x) for x in after[:3]),
    )
    online = _read("/sys/devices/system/cpu/online")
    if online:
        from perflab.hosts.proc_text import parse_cpu_list

        assert load.data["cpus"] == len(parse_cpu_list(online))
    assert (load.status == "warn") == (load.data["load1"] > load.data["cpus"] / 2)
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    assert checks["memory"].data["total"] == int(meminfo["MemTotal"].split()[0]) * 1024
    aslr = int(Path("/proc/sys/kernel/randomize_va_space").read_text())
    assert checks["aslr"].data["randomize_va_space"] == aslr
    assert checks["aslr"].status == ("ok" if aslr == 2 else "warn")
    paranoid = _read("/proc/sys/kernel/perf_event_paranoid")
    if paranoid is not None:
        assert checks["perf_event_paranoid"].data["perf_event_paranoid"] == int(paranoid)
    smt = _read("/sys/devices/system/cpu/smt/active")
    if smt is None:
        assert checks["smt"].status == "unknown"
    else:
        assert checks["smt"].data["active"] == (smt == "1")
    governor = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if governor is None:
        assert checks["governor"].status == "unknown"
    else:
        assert checks["governor"].data["governors"]["0"] == governor


def _busy_loop(**kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], **kw)


def test_busiest_processes_are_measured_and_perflabs_own_tree_is_left_out():
    # An orphan (its shell has exited: no longer in this process's tree) and our own child,
    # both busy.
    shell = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(shell.stdout.strip())
    own = _busy_loop()
    try:
        # on a loaded 2-CPU machine the orphan may get no CPU in one window: sample until
        # it shows (bounded); our own tree must be left out of every sample
        for _ in range(20):
            sampled = sample_processes(LocalHost(), interval=0.3, own_pid=os.getpid())
            assert sampled is not None
            used, seconds = sampled
            pids = [p["pid"] for p in used]
            assert own.pid not in pids and os.getpid() not in pids
            assert seconds > 0
            assert [p["cpu"] for p in used] == sorted((p["cpu"] for p in used), reverse=True)
            if orphan in pids:
                break
        assert orphan in pids, pids
    finally:
        os.kill(orphan, signal.SIGKILL)
        own.kill()
        own.wait()


# -- made-up trees: each warning, and what cannot be read


def test_governor_powersave_warns_with_what_to_do(tmp_path):
    c = by_name(state_of(make_tree(tmp_path, governor="powersave")))["governor"]
    assert c.status == "warn" and c.value == "powersave"
    assert c.message is not None
    assert c.message.startswith("CPU governor is powersave on 2 of 2 CPUs: set performance")
    assert "cpupower frequency-set -g performance" in c.message


def test_governor_mixed_and_performance(tmp_path):
    mixed = by_name(state_of(make_tree(tmp_path / "a", governor=["performance", "schedutil"])))
    assert mixed["governor"].status == "warn"
    assert "schedutil on 1 of 2 CPUs" in (mixed["governor"].message or "")
    assert mixed["governor"].data["governors"] == {"0": "performance", "1": "schedutil"}
    ok = by_name(state_of(make_tree(tmp_path / "b")))["governor"]
    assert ok.status == "ok" and ok.value == "performance"


def test_a_high_paranoid_setting_is_ok_for_root_who_samples_all_the_same(tmp_path):
    root = make_tree(tmp_path / "root", paranoid="3")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/status").write_text("Name:\tcat\nUid:\t0\t0\t0\t0\nGid:\t0\n")
    check = by_name(state_of(root))["perf_event_paranoid"]
    assert (check.status, check.value) == ("ok", "3 (root)")
    (root / "proc/self/status").write_text("Name:\tcat\nUid:\t1000\t1000\t1000\t1000\n")
    assert by_name(state_of(root))["perf_event_paranoid"].status == "warn"


def test_turbo_smt_aslr_paranoid(tmp_path):
    bad = by_name(
        state_of(make_tree(tmp_path / "bad", no_turbo="0", smt="1", aslr="0", paranoid="3"))
    )
    assert {bad[n].status for n in ("turbo", "smt", "aslr", "perf_event_paranoid")} == {"warn"}
    assert "no_turbo" in (bad["turbo"].message or "")
    assert "randomize_va_space=2" in (bad["aslr"].message or "")
    good = by_name(state_of(make_tree(tmp_path / "good")))
    assert {good[n].status for n in ("turbo", "smt", "aslr", "perf_event_paranoid")} == {"ok"}
    boost = make_tree(tmp_path / "boost", no_turbo=None)
    (boost / CPU / "cpufreq").mkdir()
    (boost / CPU / "cpufreq/boost").write_text("1\n")
    assert by_name(state_of(boost))["turbo"].status == "warn"


def test_high_load_warns_low_load_is_ok(tmp_path):
    high = by_name(state_of(make_tree(tmp_path / "h", loadavg="1.50 1.00 0.50 3/200 99")))
    assert high["load"].status == "warn" and high["load"].data["load1"] == 1.5
    assert "above half of the 2 CPUs" in (high["load"].message or "")
    low = by_name(state_of(make_tree(tmp_path / "l", loadavg="1.00 1.00 0.50 3/200 99")))
    assert low["load"].status == "ok"


def test_processes_top_three_by_share_without_our_tree(tmp_path):
    procs = {
        1: ("init", 0, 100),
        10: ("hog", 1, 1000),
        11: ("mild", 1, 1000),
        12: ("tiny", 1, 1000),
        13: ("tinier", 1, 1000),
        14: ("idle", 1, 1000),
        500: ("perflab", 1, 0),
        501: ("step", 500, 0),
    }
    root = make_tree(tmp_path, procs=procs)
    rise = {10: 80, 11: 30, 12: 5, 13: 2, 500: 100, 501: 100}  # ticks over the sample

    def wait(_seconds: float) -> None:
        for pid, extra in rise.items():
            name, ppid, ticks = procs[pid]
            set_stat(root, pid, name, ppid, ticks + extra)

    clock = iter([0.0, 1.0])
    c = system_state.processes_check(
        TreeReader(root),
        interval=1.0,
        own_pid=500,
        wait=wait,
        clock=lambda: next(clock),
        clock_ticks=100,
    )
    assert [(p["name"], p["cpu"]) for p in c.data["top"]] == [
        ("hog", 0.8),
        ("mild", 0.3),
        ("tiny", 0.05),
    ]
    assert c.data["others_cpu"] == pytest.approx(1.17)
    assert c.status == "warn" and "hog (pid 10, 80%)" in (c.message or "")


def test_memory_swap_and_throttling(tmp_path):
    c = by_name(
        state_of(
            make_tree(
                tmp_path,
                mem_available_kb=500_000,
                swap_total_kb=2_000_000,
                swap_free_kb=1_000_000,
                throttle=(3, 1),
            )
        )
    )
    assert c["memory"].status == "warn" and c["memory"].data["available"] == 500_000 * 1024
    assert c["swap"].status == "warn" and c["swap"].data["used"] == 1_000_000 * 1024
    assert c["throttling"].status == "warn"
    assert c["throttling"].data == {"core": 6, "package": 2}  # summed over 2 CPUs


def test_what_cannot_be_read_is_unknown_with_a_reason(tmp_path):
    state = state_of(tmp_path)  # an empty tree: not Linux, or nothing mounted
    assert [c.status for c in state.checks] == ["unknown"] * len(TITLES)
    assert all(c.message for c in state.checks)
    vm = by_name(state_of(make_tree(tmp_path / "vm", governor=None, no_turbo=None, throttle=None)))
    assert vm["governor"].status == vm["turbo"].status == vm["throttling"].status == "unknown"
    assert vm["load"].status == "ok"


# -- warnings on a comparison


def snapshot(root: Path, label: str, variants: list[str]) -> dict:
    return {**state_of(root).to_json(), "label": label, "variants": variants}


def codes(warnings) -> list[str]:
    return [w.code for w in warnings]


def test_steady_quiet_snapshots_give_no_warning(tmp_path):
    root = make_tree(tmp_path)
    snaps = [snapshot(root, "start", []), snapshot(root, "after block 1", ["a", "b"])]
    assert system_warnings(snaps) == []


def test_governor_change_throttling_and_high_start_load_are_warned(tmp_path):
    start = make_tree(tmp_path / "0", loadavg="1.90 1.00 1.00 1/1 1", throttle=(5, 0))
    later = make_tree(tmp_path / "1", governor="powersave", throttle=(9, 0))
    snaps = [
        snapshot(start, "start", []),
        snapshot(start, "after block 1", ["a", "b"]),
        snapshot(later, "after block 2", ["a", "b"]),
    ]
    warnings = {w.code: w for w in system_warnings(snaps)}
    assert set(warnings) == {"system_load", "governor_changed", "thermal_throttling"}
    assert "performance → powersave, after block 2" in warnings["governor_changed"].message
    assert warnings["thermal_throttling"].details["events"] == 8  # 4 more on each of 2 CPUs
    assert "only" not in warnings["thermal_throttling"].message  # every variant ran there
    assert warnings["system_load"].details["load1"] == 1.9


def test_conditions_that_touched_one_variant_only_say_so(tmp_path):
    quiet = make_tree(tmp_path / "q", throttle=(0, 0))
    hot = make_tree(tmp_path / "h", throttle=(7, 0))
    snaps = [  # order = "sequential": each snapshot after one variant's runs
        snapshot(quiet, "start", []),
        snapshot(quiet, "after a", ["a"]),
        snapshot(hot, "after b", ["b"]),
    ]
    (w,) = system_warnings(snaps)
    assert w.code == "thermal_throttling"
    assert "during the runs of b only" in w.message and "differed between variants" in w.message


# -- perflab check


@pytest.fixture
def fake_machine(monkeypatch):
    """Points `perflab check` at a made-up tree."""

    real = system_state.read_system_state

    def use(root: Path) -> None:
        def fake(reader=None, **kw):
            return real(TreeReader(root), interval=0.0, wait=lambda s: None)

        monkeypatch.setattr(system_state, "read_system_state", fake)

    return use


def test_check_exit_0_when_all_ok_and_1_on_a_warning(tmp_path, fake_machine):
    fake_machine(make_tree(tmp_path / "ok"))
    r = perflab("check")
    assert r.code == 0, r.out + r.err
    assert "CPU governor" in r.out and "performance" in r.out
    assert all(len(line) <= 80 for line in r.out.splitlines())
    fake_machine(make_tree(tmp_path / "warn", governor="powersave"))
    r = perflab("check")
    assert r.code == 1
    assert "warn: CPU governor: CPU governor is powersave on 2 of 2 CPUs" in r.out
    assert all(len(line) <= 80 for line in r.out.splitlines())


def test_check_json(tmp_path, fake_machine):
    fake_machine(make_tree(tmp_path, no_turbo="0"))
    r = perflab("check", "--json")
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["format"] == "perflab.system/1" and doc["exit_code"] == 1
    turbo = next(c for c in doc["checks"] if c["name"] == "turbo")
    assert turbo["status"] == "warn" and turbo["data"] == {"turbo": True}
    assert [c["name"] for c in doc["checks"]] == list(TITLES)


def test_check_escapes_what_it_read(tmp_path, monkeypatch):
    root = make_tree(tmp_path, procs={1: ("init", 0, 0), 7: ("evil\x1b[2J", 1, 0)})
    real = system_state.read_system_state
    clock = iter([0.0, 1.0])

    def wait(_seconds: float) -> None:
        set_stat(root, 7, "evil\x1b[2J", 1, 90)  # 90% of a CPU over the sample

    def fake(reader=None, **kw):
        return real(TreeReader(root), wait=wait, clock=lambda: next(clock), clock_ticks=100)

    monkeypatch.setattr(system_state, "read_system_state", fake)
    r = perflab("check")
    assert r.code == 1
    assert "\x1b" not in r.out and "evil\\x1b[2J" in r.out


def test_real_check_command_agrees_with_its_json():
    r = perflab("check", "--json")
    doc = json.loads(r.out)
    assert (
        r.code
        == doc["exit_code"]
        == (1 if any(c["status"] == "warn" for c in doc["checks"]) else 0)
    )


# -- recorded with every experiment

SPEC = """\
name = "snapshots"
baseline = "a"
repetitions = 2
order = "{order}"
snapshot_every = {every}

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
command = "true"

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
"""


def snapshots_of(db: Path) -> list[tuple[str, dict]]:
    with Database(db, write=False) as store:
        names = [n for n, _ in store.artifact_names(1) if n.startswith("system/")]
        return [(n, json.loads(store.artifact(1, n) or b"")) for n in names]


def test_snapshots_after_a_block_are_spaced_and_one_follows_the_last_run(tmp_path):
    """Short runs: the default spacing (10 s) leaves the start's and the last one, which
    covers every run (a snapshot per block of two 1 ms runs would be most of the time)."""
    spec = write_spec(tmp_path, SPEC.format(order="interleaved", every='"10s"'))
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db)).code == 0
    snaps = [s for _, s in snapshots_of(db)]
    assert [(s["label"], s["runs"], s["last_run"]) for s in snaps] == [
        ("start", 0, None),
        ("after block 2", 4, 4),
    ]


def test_a_tiny_experiment_records_snapshots_at_start_and_after_each_block(tmp_path):
    spec = write_spec(tmp_path, SPEC.format(order="interleaved", every=0))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 0, r.err
    snaps = snapshots_of(db)
    assert [n for n, _ in snaps] == ["system/000", "system/001", "system/002"]
    assert [s["label"] for _, s in snaps] == ["start", "after block 1", "after block 2"]
    assert [s["runs"] for _, s in snaps] == [0, 2, 2]
    assert [s["last_run"] for _, s in snaps] == [None, 2, 4]
    assert [sorted(s["variants"]) for _, s in snaps] == [[], ["a", "b"], ["a", "b"]]
    for _, s in snaps:
        assert s["format"] == "perflab.system/1"
        assert [c["name"] for c in s["checks"]] == list(TITLES)
    # readable as any experiment artifact
    show = perflab("show", "1", "--store", str(db), "--artifact", "system/001")
    assert show.code == 0 and "after block 1" in show.out


def test_sequential_snapshots_cover_one_variant_each(tmp_path):
    spec = write_spec(tmp_path, SPEC.format(order="sequential", every=0))
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db)).code == 0
    snaps = [s for _, s in snapshots_of(db)]
    assert [(s["label"], s["variants"], s["runs"]) for s in snaps] == [
        ("start", [], 0),
        ("after a", ["a"], 2),
        ("after b", ["b"], 2),
    ]


def test_compare_prints_a_warning_when_conditions_changed(tmp_path):
    spec = write_spec(tmp_path, SPEC.format(order="interleaved", every=0))
    db = tmp_path / "p.db"
    assert perflab("run", str(spec), "--store", str(db)).code == 0
    changed = make_tree(tmp_path / "t", smt="1")
    doc = {**state_of(changed).to_json(), "label": "after block 3", "variants": ["b"]}
    quiet = {**state_of(make_tree(tmp_path / "q")).to_json(), "label": "start", "variants": []}
    with Database(db) as store:  # two made-up snapshots, after the machine's own
        store.put_artifact(1, "system/003", json.dumps(quiet).encode())
        store.put_artifact(1, "system/004", json.dumps(doc).encode())
    r = perflab("compare", "1", "--store", str(db))
    assert r.code == 0, r.err
    assert "SMT changed during the experiment (off → on, after block 3)" in r.out + r.err
    j = json.loads(perflab("compare", "1", "--store", str(db), "--json").out)
    assert "smt_changed" in json.dumps(j)


def test_a_snapshot_is_due_at_a_block_end_once_the_spacing_has_passed(tmp_path):
    """`snapshot_every`: a block's end, then the spacing from the last snapshot taken; the
    runs in between are counted by the next one; a sequential plan's segments likewise."""
    now = [0.0]
    with Database(tmp_path / "s.db") as store:
        snaps = SystemSnapshots(
            store, 1, LocalHost(), "interleaved", every=10.0, clock=lambda: now[0]
        )
        runs = [_run(i, block=i // 2) for i in range(8)]
        assert snaps.read("start") is not None  # taken at 0 s
        due = []
        for i, run in enumerate(runs):
            now[0] = 3.0 * i
            due.append(snaps.due(run, runs[i + 1] if i + 1 < len(runs) else None))
            if due[-1] is not None:
                doc = snaps.read(due[-1])
                assert doc is not None and doc["runs"] == 6 and doc["last_run"] == i + 1
        # blocks end after runs 2, 4, 6, 8 at 3, 9, 15, 21 s: 15 s is the first 10 s after
        # the start's, 21 s too soon after it
        assert due == [None, None, None, None, None, "after block 3", None, None]
        assert snaps.final_label() == "after block 4"  # 2 runs since: the experiment's last
        every = SystemSnapshots(store, 1, LocalHost(), "sequential", clock=lambda: now[0])
        assert every.due(_run(0, variant="a"), _run(1, variant="b")) == "after a"


def _run(i: int, *, block: int = 0, variant: str = "a") -> RunRow:
    return RunRow(
        id=i + 1,
        order_index=i,
        block=block,
        cell_key="-",
        cell={},
        variant=variant,
        repetition=block,
        warmup=False,
        status="ok",
        reason=None,
        attempts=1,
        host=None,
        started_at=None,
        ended_at=None,
        pid=None,
        pid_start=None,
    )
