"""Profiles and perf counters of a phase that runs on a host over SSH (a real sshd on
127.0.0.1, logged into as the current user; `tests/sshd.py`): `perf record` and `perf
stat` run there, around the phase's command, through its executor. The host's copy of a
small C program (staged by ``[hosts.dut] files`` into the host's own working directory, run
as ``./spin``) has a known hot function; each run's folded stacks keep it, its profile-info
names the host and the event; page faults of a program that touches N pages are at least
N; an event the host cannot count fails the run in one line naming it and the host; a
failed phase keeps no profile or counts. The `perf` first on this machine's PATH cannot
count or sample: what runs on the host is the host's own. Nothing perflab started on the
host is left once the run is over (no perf, no shim, no perf.data or CSV in its /tmp).

perf must be able to sample and count here: when it cannot, these tests fail — never skip.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import perflab, write_spec
from perflab.observe.counters import perf_failure, pmu_reason
from perflab.observe.folded import parse_folded, shares
from perflab.store import Database
from sshd import Sshd, start_sshd

pytestmark = pytest.mark.server

PROGRAM = r"""
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
volatile unsigned long sink;
__attribute__((noinline)) void spin_remote(long n) { for (long i = 0; i < n; i++) sink += i ^ 7; }
int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "touch") == 0) {  /* one fault per fresh 4 KiB page */
        long pages = atol(argv[2]);
        char *m = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return 2;
        madvise(m, pages * 4096, MADV_NOHUGEPAGE);
        for (long i = 0; i < pages; i++) m[i * 4096] = 1;
        return 0;
    }
    spin_remote(argc > 1 ? atol(argv[1]) : 500000000);
    return 0;
}
"""

HEAD = """\
name = "remote-observe"
baseline = "a"
repetitions = 1
{top}
[hosts.dut]
{host}workdir = "{home}"
files = ["spin"]

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
on = "dut"
{phase}
"""
WALL = '[[metric]]\nname = "wall_time"\nbetter = "lower"\n'
PAGES = 2000  # pages the touch program writes: at least as many page faults

#: Names of what perflab leaves on a host while a profile or counters run there.
HOST_FILES = ("perflab-profile-", "perflab-counters-")


@pytest.fixture(scope="module")
def sshd():
    with start_sshd() as srv:
        yield srv


@pytest.fixture(autouse=True)
def not_the_hosts_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `perf` first on this machine's PATH that cannot count or sample: what runs on the
    host must be the host's own perf, found by its own PATH (not this machine's)."""
    fake = tmp_path / "this-machine-bin"
    fake.mkdir()
    (fake / "perf").write_text(
        "#!/bin/sh\necho 'perf of this machine, not of the host' >&2\nexit 1\n"
    )
    (fake / "perf").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")


@pytest.fixture(scope="module")
def spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C program, built with frame pointers; fails (never skips) without perf or gcc."""
    if shutil.which("perf") is None:
        pytest.fail("perf not found: install Debian's linux-perf (scripts/setup does)")
    tmp = tmp_path_factory.mktemp("spin")
    (tmp / "spin.c").write_text(PROGRAM)
    subprocess.run(
        ["gcc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", "spin", "spin.c"],
        cwd=tmp,
        check=True,
    )
    return tmp / "spin"


def _spec(tmp: Path, srv: Sshd, spin: Path, phase: str, top: str = "", metric: str = WALL):
    shutil.copy(spin, tmp / "spin")  # staged from the spec's folder into the host's workdir
    home = tmp / "host-home"
    text = HEAD.format(top=top, host=srv.host_table(), home=home, phase=phase) + metric
    return write_spec(tmp, text)


def _host_files() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if p.name.startswith(HOST_FILES)}


def _descendants(pid: int) -> list[str]:
    """``PID cmdline`` of every process below ``pid`` (the sshd: what runs on the host)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        out.append(f"{p} {cmd.strip()}")
    return out


def _strays(*markers: str) -> list[str]:
    """Processes on this machine whose command line names one of ``markers``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(m in cmd for m in markers):
                found.append(f"{entry.name} {cmd.strip()}")
    return found


def _assert_host_clean(srv: Sshd, tmp: Path, before: set[str]) -> None:
    """Nothing perflab started on the host is left: no process under its sshd (every
    session ended with the run), none naming the test's files anywhere (perf, the shim,
    the program), no perf.data or counts file in its /tmp. Polled, 10 s at most."""
    deadline = time.monotonic() + 10.0
    while True:
        left = _descendants(srv.proc.pid) + _strays(str(tmp), *(f"/tmp/{n}" for n in HOST_FILES))
        files = _host_files() - before
        if not left and not files:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"left on the host after the run: {left} {sorted(files)}")
        time.sleep(0.05)


def _run(tmp: Path, spec: Path) -> tuple[int, str, Path]:
    db = tmp / "s.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    return r.code, r.out + r.err, db


def _profiles(db: Path) -> list[tuple[str, dict[str, int], dict[str, object]]]:
    with Database(db) as s:
        out = []
        for run in s.runs(1):
            assert run.status == "ok", run.reason
            blob = s.artifact(1, "profile:work", run.id)
            info = s.artifact(1, "profile-info:work", run.id)
            assert blob is not None and info is not None, f"run {run.id} has no profile"
            placed = s.artifact(1, "hosts", run.id)
            assert placed is not None and "phase:work\tdut" in placed.decode()
            stacks = parse_folded(gzip.decompress(blob).decode())
            out.append((run.variant, stacks, json.loads(info)))
        return out


def _event() -> str:
    pmu = any(Path("/sys/bus/event_source/devices").glob("*/events/cpu[-_]cycles"))
    return "cycles" if pmu else "cpu-clock"


@pytest.mark.parametrize("mode", ["process", "system"])
def test_a_remote_phase_is_profiled_on_its_host(sshd, spin, tmp_path, mode):
    top = "profile = true" if mode == "process" else 'profile = "system"'
    spec = _spec(tmp_path, sshd, spin, 'command = "./spin"', top=top)
    before = _host_files()
    # another busy process on the host, outside the phase's tree, all the while: a system
    # profile must have it, a process profile must not
    bystander = tmp_path / "bystander"
    shutil.copy(spin, bystander)
    other = subprocess.Popen([str(bystander), "100000000000"])
    try:
        code, said, db = _run(tmp_path, spec)
    finally:
        other.kill()
        other.wait()
    assert code == 0, said
    runs = _profiles(db)
    assert sorted(v for v, _, _ in runs) == ["a", "b"]
    for _variant, stacks, info in runs:
        assert info["host"] == "dut" and info["mode"] == mode
        assert info["event"] == _event()
        assert info["samples"] == sum(stacks.values()) > 0
        own = shares(stacks).self_share
        # ~0.15 s of the program's CPU at 999 samples/s, most of it in spin_remote (the
        # same count whatever else the host runs: cpu-clock samples time on a CPU)
        assert own.get("spin_remote", 0) * info["samples"] >= 50, own
        comms = {stack.split(";", 1)[0] for stack in stacks}
        tree = {"spin", "sh", "perf-exec"}  # the command's processes (perf's, before exec)
        if mode == "process":  # its own process tree only
            assert "spin" in comms and comms <= tree, comms
            assert own["spin_remote"] > 0.5, own
        else:  # the whole host while it ran: the bystander too
            assert "spin" in comms and "bystander" in comms, comms
    _assert_host_clean(sshd, tmp_path, before)


COUNTERS = """\
command = "./spin touch {pages}"
counters = ["page-faults", "context-switches", "task-clock"]
"""
COUNTER_METRICS = """\
[[metric]]
name = "faults"
counter = "page-faults"
better = "lower"
[[metric]]
name = "cpu_ms"
counter = "task-clock"
better = "lower"
"""


def _metrics(db: Path) -> dict[str, list[float]]:
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
        ).fetchall()
    out: dict[str, list[float]] = {}
    for name, value in rows:
        out.setdefault(name, []).append(value)
    return out


def test_counters_of_a_remote_phase_are_counted_on_its_host(sshd, spin, tmp_path):
    phase = COUNTERS.format(pages=PAGES)
    spec = _spec(tmp_path, sshd, spin, phase, metric=COUNTER_METRICS)
    before = _host_files()
    code, said, db = _run(tmp_path, spec)
    assert code == 0, said
    values = _metrics(db)
    assert len(values["faults"]) == 2 and len(values["cpu_ms"]) == 2
    # every page touched once: a fault each (and the program's own start, a few dozen more)
    assert all(PAGES <= f < PAGES + 2000 for f in values["faults"]), values["faults"]
    assert all(0 < ms < 5000 for ms in values["cpu_ms"]), values["cpu_ms"]
    with Database(db) as s:
        for run in s.runs(1):
            csv = s.artifact(1, "counters:work", run.id)
            assert csv is not None and b"page-faults" in csv  # perf's CSV, fetched back
    _assert_host_clean(sshd, tmp_path, before)


@pytest.mark.skipif(
    any(Path("/sys/bus/event_source/devices").glob("cpu*")), reason="this machine has a PMU"
)
def test_a_hardware_event_the_host_cannot_count_is_one_line_naming_it_and_the_host(
    sshd, spin, tmp_path
):
    phase = COUNTERS.format(pages=10).replace('"task-clock"', '"task-clock", "cycles"')
    spec = _spec(tmp_path, sshd, spin, phase, metric=COUNTER_METRICS)
    before = _host_files()
    code, said, db = _run(tmp_path, spec)
    assert code == 1, said
    with sqlite3.connect(db) as c:
        reasons = [x for (x,) in c.execute("SELECT reason FROM runs WHERE status = 'failed'")]
    assert reasons and len(reasons) == 2, said
    for reason in reasons:
        assert "\n" not in reason and reason.startswith("phase:work: "), reason
        assert "counter 'cycles' is not supported on host dut" in reason, reason
        assert "no hardware PMU there" in reason, reason  # the host's event sources
    assert "counter 'cycles' is not supported on host dut" in said
    _assert_host_clean(sshd, tmp_path, before)


def test_a_failed_remote_phase_leaves_nothing_of_its_profile_or_counts_on_the_host(
    sshd, spin, tmp_path
):
    phase = 'command = "./spin touch 10; exit 3"\ncounters = ["page-faults"]\nprofile = true\n'
    spec = _spec(tmp_path, sshd, spin, phase)
    before = _host_files()
    code, said, db = _run(tmp_path, spec)
    assert code == 1, said
    with Database(db) as s:
        runs = s.runs(1)
        assert [x.status for x in runs] == ["failed", "failed"], said
        for run in runs:
            assert run.reason == "phase:work: exited with status 3", run.reason
            names = {n for n, _ in s.artifact_names(1, run.id)}
            assert not names & {"profile:work", "counters:work"}, names
    _assert_host_clean(sshd, tmp_path, before)


def test_what_perf_lacks_on_a_host_is_said_with_the_host():
    line = perf_failure(
        "Error: Access to performance monitoring ... perf_event_paranoid", "3", "on host dut"
    )
    assert line.startswith("perf may not count on host dut: kernel.perf_event_paranoid = 3 ")
    line = perf_failure("sh: 1: perf: not found", "", "on host dut")
    assert line == "perf is not installed on host dut (Debian: apt-get install linux-perf)"
    assert perf_failure("", "", "on host dut") == "perf stat failed on host dut without a message"
    assert perf_failure("oops\nmore", "", "on host dut") == "on host dut: oops"
    assert pmu_reason("cycles", ["cpu", "software"], "there") == ""  # it has a PMU
    assert pmu_reason("page-faults", ["software"], "there") == ""  # not a hardware event
    assert pmu_reason("cycles:u", ["software", "msr"], "there").startswith(
        ": no hardware PMU there (/sys/bus/event_source/devices has only msr, software;"
    )
