"""A pool of labgrid places (`[hosts.NAME] labgrid = "rig-*"` or a list, with `count` and
`min`), against a real `labgrid-coordinator` and `labgrid-exporter` on loopback
(labgrid_helpers.py) lending three places whose NetworkServices are one real sshd on three
loopback addresses (127.0.0.10, .11, .12: three "devices"; each run prints the address it
reached). perflab takes at most ``count`` of the free places the pattern names, spreads the
blocks over them, records each run's device by its place and each device's environment
with its place, and releases every place at the end; with fewer than ``min`` free at once
it holds none, says who holds the others, and waits — then runs once they are free, or
stops in one line at its labgrid_timeout. The pool of the lab's emulated routers lent as
two places with power ports is in tests/hosts/test_device_pool.py."""

from __future__ import annotations

import json
import re
import signal

import pytest
from cli_helpers import Perflab, perflab, runs_seen, write_spec
from labgrid_helpers import ALICE, EXPORTER, start_lab
from perflab.store import Database
from proc_helpers import gone, live, marker_sleep, wait_until
from sshd import start_sshd

pytestmark = pytest.mark.server

ADDRESSES = {"rig-1": "127.0.0.10", "rig-2": "127.0.0.11", "rig-3": "127.0.0.12"}


@pytest.fixture(scope="module")
def sshd():
    with start_sshd(listen=tuple(ADDRESSES.values())) as srv:
        yield srv


@pytest.fixture(scope="module")
def grid(sshd):
    resources = {
        place: {"NetworkService": {"address": address, "username": sshd.user, "port": sshd.port}}
        for place, address in ADDRESSES.items()
    }
    with start_lab(resources) as grid:
        for place in ADDRESSES:
            grid.create_place(place, place)
        yield grid


@pytest.fixture
def rigs(grid):
    """The places, free after the test whoever holds them (a failed test's holder)."""
    yield grid
    for place in ADDRESSES:
        if grid.holder(place) is not None:
            grid.client("-p", place, "release", "--kick")


def _spec(grid, sshd, places: str, *, extra: str = "", repetitions: int = 4) -> str:
    options = ", ".join(f'"{o}"' for o in sshd.options())
    return f"""\
name = "rigs"
baseline = "a"
repetitions = {repetitions}
order = "interleaved"

[hosts.dut]
labgrid = {places}
labgrid_coordinator = "{grid.address}"
identity = "{sshd.identity}"
options = [{options}]
{extra}
[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "dut"
command = 'sleep 0.3; echo "at=$SSH_CONNECTION"; echo v=1'

[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def _reached(db, eid: int = 1) -> dict[str, set[str]]:
    """device → the addresses its runs' phase reached (from its stdout)."""
    out: dict[str, set[str]] = {}
    with Database(db) as s:
        for run in s.runs(eid):
            text = (s.artifact(eid, "stdout:phase:p", run.id) or b"").decode()
            at = re.search(r"at=\S+ \d+ (\S+) ", text)
            out.setdefault(run.device or "?", set()).add(at.group(1) if at else "?")
    return out


def test_a_pattern_takes_count_of_the_free_places_spreads_the_blocks_and_releases_them(
    rigs, sshd, tmp_path
):
    """rig-1 is held by a colleague: ``rig-*`` with count = 2 takes rig-2 and rig-3, the
    blocks go to both (each run's device its place, the address it reached that place's),
    each device's environment is recorded with its place, and both are released."""
    rigs.client("-p", "rig-1", "acquire", who=ALICE)
    spec = write_spec(tmp_path, _spec(rigs, sshd, '"rig-*"', extra="count = 2\n"))
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"), "--no-compare")
    assert r.code == 0, r.err
    assert "labgrid place rig-2 acquired" in r.err and "labgrid place rig-3 acquired" in r.err
    reached = _reached(tmp_path / "p.db")
    assert reached == {"rig-2": {"127.0.0.11"}, "rig-3": {"127.0.0.12"}}, reached
    with Database(tmp_path / "p.db") as s:
        runs = s.runs(1)
        assert [run.status for run in runs] == ["ok"] * 8
        for block in {run.block for run in runs}:  # a block whole on one device
            assert len({run.device for run in runs if run.block == block}) == 1
        envs = s.environments(1)
        assert envs["rig-2"]["labgrid"]["place"] == "rig-2"
        assert envs["rig-3"]["labgrid"]["place"] == "rig-3"
    assert rigs.holder("rig-2") is None and rigs.holder("rig-3") is None
    assert rigs.holder("rig-1") == "alice-laptop/alice"  # the colleague's is left as it was
    r = perflab("show", "1", "--runs", "--json", "--store", str(tmp_path / "p.db"))
    assert {run["device"] for run in json.loads(r.out)["runs"]} == {"rig-2", "rig-3"}


def test_fewer_than_min_free_holds_none_says_who_holds_the_others_and_waits(rigs, sshd, tmp_path):
    """min = 2 of [rig-1, rig-2] while a colleague holds rig-2: perflab holds neither
    (rig-1 stays free for others) and says who holds rig-2; once it is released, perflab
    takes both and runs on both."""
    rigs.client("-p", "rig-2", "acquire", who=ALICE)
    text = _spec(rigs, sshd, '["rig-1", "rig-2"]', extra="min = 2\n", repetitions=2)
    run = Perflab(
        "run", str(write_spec(tmp_path, text)), "--store", str(tmp_path / "p.db"), "--no-compare"
    )
    line = run.said("waiting for labgrid places rig-1, rig-2")
    assert "1 of 2 free, 2 wanted" in line and "rig-2 held by alice@alice-laptop" in line, line
    assert rigs.holder("rig-1") is None  # nothing held while waiting
    rigs.client("-p", "rig-2", "release", who=ALICE)
    assert run.finish(120) == 0, run.stderr
    assert set(_reached(tmp_path / "p.db")) == {"rig-1", "rig-2"}
    assert rigs.holder("rig-1") is None and rigs.holder("rig-2") is None


def test_a_pool_not_free_in_time_is_one_line_naming_the_holder_and_nothing_held(
    rigs, sshd, tmp_path
):
    rigs.client("-p", "rig-3", "acquire", who=ALICE)
    extra = 'min = 3\nlabgrid_timeout = "1s"\n'
    r = perflab(
        "run",
        str(write_spec(tmp_path, _spec(rigs, sshd, '"rig-*"', extra=extra))),
        "--store",
        str(tmp_path / "p.db"),
        "--no-compare",
    )
    assert r.code == 1, r.err
    [error] = [x for x in r.err.splitlines() if "error" in x]
    assert "labgrid places rig-*: 2 of 3 free, 3 wanted (rig-3 held by alice@" in error, r.err
    assert "waited 1 s (labgrid_timeout)" in error and "Traceback" not in r.err
    assert rigs.holder("rig-1") is None and rigs.holder("rig-2") is None
    with Database(tmp_path / "p.db") as s:
        assert {r.status for r in s.runs(1)} == {"pending"}  # resumable


def test_sigterm_mid_run_on_both_places_releases_both_and_resume_finishes(rigs, sshd, tmp_path):
    """SIGTERM while a run is in flight on each place: both places released, nothing
    left running, no run recorded twice; --resume takes the places again and finishes."""
    sleeper, hold = marker_sleep(tmp_path), tmp_path / "hold"
    hold.write_text("")  # while it is there, a run waits
    text = _spec(rigs, sshd, '"rig-*"', extra="count = 2\n", repetitions=2).replace(
        "sleep 0.3;", f"if [ -e {hold} ]; then {sleeper} 300; fi;"
    )
    db = tmp_path / "p.db"
    run = Perflab("run", str(write_spec(tmp_path, text)), "--store", str(db), "--no-compare")
    try:
        wait_until(
            lambda: [st for st, _ in runs_seen(db)].count("running") == 2 and live(sleeper), 60
        )  # one in flight on each
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(60) != 0
        assert all(rigs.holder(p) is None for p in ADDRESSES), run.stderr
        assert gone(sleeper)
    finally:
        run.kill()
    with Database(db) as s:
        assert {r.status for r in s.runs(1)} == {"pending"}  # the runs in flight: pending
    hold.unlink()
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        runs = s.runs(1)
    assert [x.status for x in runs] == ["ok"] * 4 and max(x.attempts for x in runs) <= 2
    assert all(rigs.holder(p) is None for p in ADDRESSES)


def test_a_dry_run_names_every_place_of_the_pool_and_who_holds_it(rigs, sshd, tmp_path):
    rigs.client("-p", "rig-2", "acquire", who=ALICE)
    spec = write_spec(tmp_path, _spec(rigs, sshd, '"rig-*"', extra="count = 2\n"))
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if "labgrid place 'rig-1'" in x)
    assert "'rig-2' on" in line and "held by alice@alice-laptop" in line, line
    assert f"NetworkService {EXPORTER}" not in line  # resources by their names in the place
    assert "a pool of up to 2, once 1 are free" in line, line
    assert all(rigs.holder(p) is None for p in ("rig-1", "rig-3"))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('labgrid = "rig-1"\ncount = 2\n', "count sizes a pool of places"),
        ('labgrid = "rig-*"\ncount = 1\nmin = 2\n', "min = 2 is more than count = 1"),
        ('labgrid = ["rig-1", "rig-2"]\nmin = 3\n', "labgrid names 2 places"),
        ('labgrid = ["rig-1", ""]\n', "labgrid names a place: it is empty"),
        ('labgrid = "rig-*"\npool = 2\n', "leave pool out"),
    ],
)
def test_a_pool_of_places_badly_sized_is_one_line_at_its_key(tmp_path, table, message):
    text = f"""\
name = "x"
baseline = "a"
[hosts.dut]
{table}
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
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code == 2 and message in r.err, r.err
    assert "spec.toml:" in r.err and "\n" not in r.err.strip(), r.err
