"""A pool of devices (`[hosts.NAME] pool = N`): blocks spread over the devices, each block
whole on one, devices working side by side, each run's device recorded, a device that
cannot be reached set aside.

The devices here are one real sshd listening on two loopback addresses (127.0.0.10 and
127.0.0.11): ``ssh = "USER@127.0.0.1{slot}:PORT"`` names device 0 and device 1, and each
run's phase prints the address it reached (``$SSH_CONNECTION``). The pool of emulated
routers (real kernels in QEMU) is tests/hosts/test_device_pool.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections import defaultdict

import pytest
from cli_helpers import perflab, perflab_process, runs_seen
from perflab.store import Database
from proc_helpers import gone, wait_until
from sshd import start_sshd

ADDRESSES = ("127.0.0.10", "127.0.0.11")


@pytest.fixture(scope="module")
def sshd():
    with start_sshd(listen=ADDRESSES) as srv:
        yield srv


def _spec(
    srv, *, repetitions: int = 4, pool: int = 2, sleep: float = 0.5, command: str = ""
) -> str:
    opts = ", ".join(f'"{o}"' for o in srv.options())
    command = command or f'sleep {sleep}; echo "at=$SSH_CONNECTION"; echo v=1'
    return f"""\
name = "pool"
baseline = "a"
repetitions = {repetitions}
order = "interleaved"

[hosts.dut]
ssh = "{srv.user}@127.0.0.1{{slot}}:{srv.port}"
identity = "{srv.identity}"
options = [{opts}]
pool = {pool}

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "dut"
command = '''{command}'''

[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9.]+)'
"""


def _statuses(db) -> list[str]:
    return [status for status, _ in runs_seen(db)]


def _runs(db):
    with Database(db) as s:
        return [(r, s.artifact(1, "stdout:phase:p", r.id)) for r in s.runs(1)]


def test_blocks_spread_over_the_devices_each_whole_on_one(sshd, tmp_path):
    spec = tmp_path / "pool.toml"
    spec.write_text(_spec(sshd))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs = _runs(db)
    assert len(runs) == 8 and {run.status for run, _ in runs} == {"ok"}
    devices_of_block = defaultdict(set)
    for run, out in runs:
        # the run's device is the address its phase reached: dut[0] → 127.0.0.10
        slot = int(run.device.removeprefix("dut[").removesuffix("]"))
        assert f" {ADDRESSES[slot]} " in out.decode(), (run.device, out)
        devices_of_block[run.block].add(run.device)
    assert all(len(d) == 1 for d in devices_of_block.values())  # a block whole on one device
    assert {d for ds in devices_of_block.values() for d in ds} == {"dut[0]", "dut[1]"}
    # runs on the two devices overlap in time: they ran side by side
    spans = {
        dev: [(run.started_at, run.ended_at) for run, _ in runs if run.device == dev]
        for dev in ("dut[0]", "dut[1]")
    }
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans["dut[0]"] for b0, b1 in spans["dut[1]"]), (
        spans
    )
    # `show --runs` and its JSON name each run's device
    shown = perflab("show", "1", "--store", str(db), "--runs", "--json")
    assert shown.code == 0, shown.err
    doc = json.loads(shown.out)
    assert {x["device"] for x in doc["runs"]} == {"dut[0]", "dut[1]"}
    table = perflab("show", "1", "--store", str(db), "--runs")
    assert "device" in table.out and "dut[1]" in table.out


def test_a_command_run_here_names_its_runs_device_by_slot(sshd, tmp_path):
    """``{slot}`` in a phase that runs on this machine is the slot of the device the run
    is on (a load sent from here reaches its device: ``server = "127.0.0.1:1131{slot}"``);
    before_all, which runs once, cannot name it; without a pool it is no parameter."""
    text = _spec(sshd, repetitions=3).replace('name = "v"\n', 'name = "v"\nphase = "p"\n') + (
        '\n[[phase]]\nname = "here"\ncommand = "echo slot={slot}"\n'
        '\n[[metric]]\nname = "slot"\nphase = "here"\nbetter = "lower"\n'
        "regex = 'slot=(?P<value>[0-9]+)'\n"
    )
    spec = tmp_path / "pool.toml"
    spec.write_text(text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        runs = s.runs(1)
        for run in runs:
            said = s.artifact(1, "stdout:phase:here", run.id).decode().strip()
            assert said == f"slot={run.device.removeprefix('dut[').removesuffix(']')}", said
        assert {run.device for run in runs} == {"dut[0]", "dut[1]"}
    spec.write_text('before_all = "echo {slot}"\n' + text)
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 2 and "'{slot}' is per run; before_all runs once" in r.err, r.err
    spec.write_text(text.replace("pool = 2", "").replace("127.0.0.1{slot}", "127.0.0.10"))
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 2 and "unknown parameter '{slot}'" in r.err, r.err


def test_adaptive_repetitions_add_a_block_per_device_at_a_time(sshd, tmp_path):
    """With adaptive repetitions a pool of two adds two blocks at a time (one per device, in
    the time of one), up to the maximum, and both devices take the blocks added."""
    text = _spec(sshd, sleep=0.2, command='sleep 0.2; echo "v=$PERFLAB_RUN"').replace(
        "repetitions = 4", 'repetitions = { min = 2, max = 5, target_ci = "0.01%" }'
    )
    spec = tmp_path / "pool.toml"
    spec.write_text(text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert "adding blocks 3–4" in r.err and "adding block 5" in r.err, r.err
    runs = [run for run, _ in _runs(db)]
    assert len({run.block for run in runs}) == 5 and len(runs) == 10
    added = {run.device for run in runs if run.block in (2, 3)}  # blocks 3–4 (0-based 2, 3)
    assert added == {"dut[0]", "dut[1]"}, added


@pytest.mark.parametrize("down", [1, 0])
def test_a_device_that_cannot_be_reached_is_set_aside(tmp_path, down):
    """One device's address has no server (the first one too: the experiment does not
    need device 0): it is set aside, said once, and every run is made on the other."""
    up = 1 - down
    with start_sshd(listen=(ADDRESSES[up],)) as srv:
        spec = tmp_path / "pool.toml"
        spec.write_text(_spec(srv, repetitions=2, sleep=0))
        db = tmp_path / "p.db"
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert r.err.count(f"device dut[{down}] set aside") == 1, r.err
    runs = _runs(db)
    assert len(runs) == 4 and {run.status for run, _ in runs} == {"ok"}
    assert {run.device for run, _ in runs} == {f"dut[{up}]"}


#: Device 1 (127.0.0.11) measures 6% lower than device 0, variant b 2% above a. The runs'
#: noise is the block's, 0 to 0.35 in steps of 0.05 with no trend over the blocks: the 8
#: blocks' runs less their device's mean have no outlier (modified z > 4.5) however the
#: blocks fall on the two devices (all 256 ways checked); awk's rand() seeded by the run
#: flagged a run in 6 (variant a) and 4 (b) of them.
ODD_BOARD = (
    "case $SSH_CONNECTION in *127.0.0.11*) base=94;; *) base=100;; esac; "
    '[ "$PERFLAB_VARIANT" = b ] && base=$((base + 2)); '
    'awk -v b=$base -v n={block} "BEGIN { print \\"v=\\" b + (n * 3 % 8) * 0.05 }"'
)


def test_a_pools_runs_are_compared_within_devices_and_an_odd_board_named(sshd, tmp_path):
    """The change is estimated within devices ("devices"), so the boards' 6% gap is not
    in it; each device's offset is in the JSON; the odd board is named in a warning."""
    spec = tmp_path / "pool.toml"
    spec.write_text(_spec(sshd, repetitions=8, command=ODD_BOARD))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert {run.device for run, _ in _runs(db)} == {"dut[0]", "dut[1]"}
    r = perflab("compare", "1", "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    (c,) = doc["comparisons"]
    assert c["method"] == "devices" and c["significant"], c
    assert 0.015 < c["estimate"] < 0.025, c  # b's +2%, not blurred by the boards' gap
    (spread,) = doc["device_spreads"]
    offsets = {o["device"]: o["offset"] for o in spread["offsets"]}
    assert offsets["dut[0]"] > 0.02 and offsets["dut[1]"] < -0.02, offsets
    r = perflab("compare", "1", "--store", str(db))
    text = " ".join(r.out.split())  # as read, whatever the 80-column wrapping
    assert "within each device" in text, r.out  # fixed effects, or ranks for skewed runs
    assert re.search(r"dut\[1\] runs [5-7]\.\d% slower than dut\[0\] in every variant", text)
    # the boards' gap is no outlier: runs less their device's mean (with a split where the
    # raw runs would flag it: tests/analysis/test_compare_pool.py)
    assert "outliers" not in r.out, r.out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_pool_stopped_mid_experiment_resumes_without_losing_or_repeating(sshd, tmp_path, sig):
    """Ctrl-C or kill -9 while both devices are in a run: nothing recorded twice or lost;
    --resume finishes every run on the pool."""
    log = tmp_path / f"pool-log-{os.getpid()}-{tmp_path.name}.txt"  # its processes' marker
    spec = tmp_path / "pool.toml"
    command = f"echo start {{run}} >> {log}; sleep 0.6; echo v=1"
    spec.write_text(_spec(sshd, repetitions=6, command=command))
    db = tmp_path / "p.db"
    p = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
    wait_until(lambda: _statuses(db).count("ok") >= 2 and _statuses(db).count("running") == 2)
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == (130 if sig == signal.SIGINT else -9)
    done = [run.order_index for run, _ in _runs(db) if run.status == "ok"]
    assert 2 <= len(done) < 12
    if sig == signal.SIGINT:
        assert "running" not in _statuses(db)  # the runs in flight went back to pending
    # kill -9 leaves the runs in flight to end on their own (their ssh and remote shell);
    # one may log its start after the kill: count it as before the stop
    assert gone(log)
    started_before = len(log.read_text().split("\n")) - 1
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs = _runs(db)
    assert [run.status for run, _ in runs] == ["ok"] * 12
    assert {run.device for run, _ in runs} == {"dut[0]", "dut[1]"}
    # no run that was ok before the stop ran again after it
    again = [int(line.split()[1]) - 1 for line in log.read_text().splitlines()[started_before:]]
    assert not set(again) & set(done) and sorted(again) == sorted(set(range(12)) - set(done))


@pytest.mark.parametrize(
    "host, words",
    [
        ('ssh = "u@127.0.0.1:22"\npool = 2', "told apart by {slot}"),
        ('ssh = "u@127.0.0.1{slot}:22"', "names a device of a pool: set pool = N"),
        ('ssh = "u@127.0.0.1{slot}:22"\npool = 0', "greater than or equal to 1"),
        ('labgrid = "rack-1"\npool = 2', "leave pool out"),
        (
            'ssh = "u@127.0.0.1{slot}:22"\npool = 2\n[hosts.dut.control]\nboot = "vm --port 22"',
            "name it in hosts.dut.control.boot",
        ),
    ],
)
def test_a_pool_badly_written_is_one_line_at_its_key(tmp_path, host, words):
    spec = tmp_path / "bad.toml"
    spec.write_text(
        f"""\
name = "bad"
baseline = "a"
[hosts.dut]
{host}
[[variant]]
name = "a"
[[phase]]
name = "p"
on = "dut"
command = "true"
[[metric]]
name = "wall_time"
phase = "p"
better = "lower"
"""
    )
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert r.code == 2, r.err
    assert words in r.err and f"{spec}:" in r.err, r.err
    assert len(r.err.strip().splitlines()) <= 2, r.err
    assert not (tmp_path / "p.db").exists()
