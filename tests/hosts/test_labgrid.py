"""Devices lent by a labgrid coordinator (`[hosts.NAME] labgrid = "PLACE"`), against a
real `labgrid-coordinator` and `labgrid-exporter` on loopback (labgrid_helpers.py)
exporting a real sshd (sshd.py) as the place's NetworkService: perflab acquires the
place for the experiment and releases it at its end, also when stopped by SIGTERM; it
waits while someone else holds it, saying who, and fails in one line naming the holder
after its labgrid_timeout; a place left held by a perflab killed with SIGKILL is said to
be stale, with the command that releases it; two team members' perflab processes (their
own labgrid identities and login names) sharing the place and one PostgreSQL store
(pg.py) both finish, never on the place at the same time, and `perflab ls` says who ran
what; the emulated router (lab.py) lent by a place with a power port and a serial console
is powered off and on through labgrid, and its console kept with the run. Every perflab
here is a process of its own, as a team member's would be."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import Perflab, perflab, write_spec
from lab import lab_fixture, ssh_options, vm_argv  # noqa: F401 (lab_fixture: the fixture lab)
from labgrid_helpers import ALICE, BOB, Pdu, identity_env, ssh_service, start_lab
from perflab.store import Database
from proc_helpers import gone, live, marker_sleep, wait_until
from servers import LOOPBACK, free_port
from sshd import start_sshd

pytestmark = pytest.mark.server

PLACE = "dut"
CLIENT = Path(sys.executable).parent / "labgrid-client"


@pytest.fixture(scope="module")
def sshd():
    with start_sshd() as srv:
        yield srv


@pytest.fixture(scope="module")
def grid(sshd):
    with start_lab({"dut": ssh_service(sshd)}) as grid:
        grid.create_place(PLACE, "dut")
        yield grid


@pytest.fixture
def place(grid):
    """The place (free: every test leaves it so); freed after the test whoever holds it
    (a failed test's holder)."""
    yield PLACE
    if grid.holder(PLACE) is not None:
        grid.client("-p", PLACE, "release", "--kick")


def _spec(grid, sshd, *, name="grid", command="echo v=1", timeout="10m", before_all="") -> str:
    options = ", ".join(f'"{o}"' for o in sshd.options())
    hook = f"before_all = {json.dumps(before_all)}\n" if before_all else ""
    return f"""\
name = "{name}"
baseline = "a"
repetitions = 2
{hook}
[hosts.dut]
labgrid = "{PLACE}"
labgrid_coordinator = "{grid.address}"
labgrid_timeout = "{timeout}"
identity = "{sshd.identity}"
options = [{options}]

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
on = "dut"
command = "{command}"

[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def _run(tmp_path, text: str, *extra: str, env=None) -> Perflab:
    spec = write_spec(tmp_path, text)
    store = extra[0] if extra else str(tmp_path / "p.db")
    return Perflab("run", str(spec), "--store", store, "--no-compare", env=env)


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid → (parent pid, command line with spaces) of every process."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            out[int(pid)] = (int(stat[1]), open(f"/proc/{pid}/cmdline", "rb").read())
    return out


def _control_dirs(pid: int) -> set[bytes]:
    """The folders of the SSH control sockets of perflab ``pid`` (its ssh children's
    ControlPath): what a perflab killed with SIGKILL leaves running is named by them (its
    control master lives on for ControlPersist's 60 s, titled with its socket's path)."""
    dirs = set()
    for ppid, cmd in _processes().values():
        for arg in cmd.split(b"\0") if ppid == pid else ():
            if arg.startswith(b"ControlPath="):
                dirs.add(os.path.dirname(arg.removeprefix(b"ControlPath=")))
    return dirs


def test_an_experiment_on_a_place_acquires_it_records_it_and_releases_it(
    grid, sshd, place, tmp_path
):
    during = tmp_path / "during.txt"
    hook = f"{CLIENT} -x {grid.address} -p {place} show > {during}"
    run = _run(tmp_path, _spec(grid, sshd, before_all=hook))
    assert run.finish() == 0, run.stderr
    assert f"host dut: labgrid place {place} acquired ({sshd.user}@127.0.0.1:{sshd.port})" in (
        run.stderr
    )
    # while it ran, the place was this perflab's: its holder, marked with its pid
    shown = during.read_text()
    me = re.search(r"acquired: (\S+)", shown)
    assert me and me.group(1) != "None", shown
    assert f"/perflab-pid-{run.proc.pid}-" in shown, shown
    assert grid.holder(place) is None  # released at its end
    with Database(tmp_path / "p.db") as s:
        record = s.environments(1)["dut"]["labgrid"]
        assert record["place"] == place and record["coordinator"] == grid.address
        assert record["acquired_by"] == me.group(1)
        service = next(r for r in record["resources"] if r["cls"] == "NetworkService")
        assert service["params"]["port"] == sshd.port
        assert service["path"] == "lab-exporter/dut/NetworkService/NetworkService"
        for r in s.runs(1):
            assert r.status == "ok"
            lines = s.artifact(1, "hosts", r.id).decode().splitlines()
            placed = dict(line.split("\t") for line in lines)
            assert placed["phase:p"] == "dut"
            assert json.loads(placed["labgrid:dut"])["place"] == place
    # and plain `perflab show` says it, on the host's environment
    shown = perflab("show", "1", "--store", str(tmp_path / "p.db"))
    assert shown.code == 0, shown.err
    said = (
        f"labgrid place {place} (coordinator {grid.address}, acquired by {record['acquired_by']})"
    )
    assert said in " ".join(shown.out.split()), shown.out


def test_a_place_held_by_someone_else_is_waited_for_then_fails_naming_the_holder(
    grid, sshd, place, tmp_path
):
    grid.client("-p", place, "acquire", who=ALICE)
    run = _run(tmp_path, _spec(grid, sshd, timeout="1.5s"))
    line = run.said("waiting for labgrid place dut")
    assert "(held by alice@alice-laptop since " in line and "up to 1.5 s" in line, line
    assert run.finish() == 1
    errors = [x for x in run.err if "error" in x]
    assert len(errors) == 1, run.stderr
    assert re.search(
        r"perflab: error: host 'dut': labgrid place 'dut' is held by alice@alice-laptop since "
        r"\d\d:\d\d:\d\d; waited 1.5 s \(labgrid_timeout\)",
        errors[0],
    ), errors[0]
    assert grid.holder(place) == "alice-laptop/alice"  # never taken from her
    with Database(tmp_path / "p.db") as s:
        assert {r.status for r in s.runs(1)} == {"pending"}  # resumable
    # She is done: the next perflab waits for her, then runs.
    (tmp_path / "again").mkdir()
    again = _run(tmp_path / "again", _spec(grid, sshd))
    again.said("(held by alice@alice-laptop since ")
    grid.client("-p", place, "release", who=ALICE)
    assert again.finish() == 0, again.stderr
    assert grid.holder(place) is None


def test_sigterm_releases_the_place(grid, sshd, place, tmp_path):
    sleeper = marker_sleep(tmp_path)
    run = _run(tmp_path, _spec(grid, sshd, command=f"{sleeper} 300; echo v=1"))
    try:
        wait_until(lambda: live(sleeper), 60)  # a run in flight on the place's device
        assert grid.holder(place) is not None
        run.proc.send_signal(signal.SIGTERM)
        assert run.finish(60) != 0
        assert grid.holder(place) is None, run.stderr
        assert gone(sleeper)
    finally:
        run.kill()


def test_a_perflab_killed_leaves_a_stale_lock_said_so_with_how_to_release_it(
    grid, sshd, place, tmp_path
):
    sleeper = marker_sleep(tmp_path)
    run = _run(tmp_path, _spec(grid, sshd, command=f"{sleeper} 300; echo v=1"))
    dirs: set[bytes] = set()
    try:
        wait_until(lambda: live(sleeper), 60)
        dirs = _control_dirs(run.proc.pid)
        os.kill(run.proc.pid, signal.SIGKILL)  # no handler, no release
        run.finish(30)
        assert gone(sleeper)
    finally:
        run.kill()
        for pid, (_, cmd) in _processes().items():  # its SSH control master
            if any(d in cmd for d in dirs):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
    holder = grid.holder(place)
    assert holder is not None  # held still, as `labgrid-client who` shows
    user, host = holder.split("/")[1], holder.split("/")[0]
    who = grid.client("who").stdout  # columns: User Host Place Changed
    assert re.search(rf"^{re.escape(user)}\s+{re.escape(host)}\s+{place}\s", who, re.M), who
    (tmp_path / "next").mkdir()
    again = _run(tmp_path / "next", _spec(grid, sshd, timeout="0.5s"))
    assert again.finish() == 1
    release = f"`labgrid-client -x {grid.address} -p {place} release`"
    assert (
        f"by perflab pid {run.proc.pid} on this host, which is gone: a lock left by a perflab "
        f"killed with SIGKILL; release it with {release}"
    ) in again.stderr, again.stderr
    grid.client("-p", place, "release")  # as the message says
    assert grid.holder(place) is None


def test_two_team_members_share_the_place_and_one_postgresql_store(
    grid, sshd, place, tmp_path, pg_url
):
    """Alice and Bob (their own login names and labgrid identities, as on two machines)
    run experiments on the same place into one PostgreSQL store: Bob's waits for Alice's,
    both finish, no run of one overlaps a run of the other, and `perflab ls` says who ran
    what."""
    go = tmp_path / "go"  # Alice's runs wait for it (30 s at most): Bob is waiting by then
    command = f"i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
    runs = {}
    try:
        for (user, host), folder in ((ALICE, "alice"), (BOB, "bob")):
            (tmp_path / folder).mkdir()
            text = _spec(grid, sshd, name=f"{user}-exp", command=command + "echo v=1")
            runs[user] = _run(tmp_path / folder, text, pg_url, env=identity_env(user, host))
            if user == "alice":  # Bob starts while Alice holds the place
                runs[user].said(f"labgrid place {place} acquired")
        waited = runs["bob"].said("waiting for labgrid place dut")
        assert "(held by alice@alice-laptop since " in waited, waited
        assert waited.rstrip().endswith(", by perflab), up to 600 s"), waited
        go.touch()
        for user, run in runs.items():
            assert run.finish() == 0, f"{user}: {run.stderr}"
    finally:
        for run in runs.values():
            run.kill()
    assert grid.holder(place) is None
    with Database(pg_url) as s:
        experiments = {e.name: e for e, _ in s.experiments()}
        assert sorted(experiments) == ["alice-exp", "bob-exp"]
        spans = {}
        for name, e in experiments.items():
            rows = s.runs(e.id)
            assert [r.status for r in rows] == ["ok"] * 4
            spans[name] = (min(r.started_at for r in rows), max(r.ended_at for r in rows))
            record = s.environments(e.id)["dut"]["labgrid"]
            host, user = ("alice-laptop", "alice") if name == "alice-exp" else BOB[::-1]
            assert record["acquired_by"] == f"{host}/{user}"
    alice_end, bob_start = spans["alice-exp"][1], spans["bob-exp"][0]
    assert alice_end <= bob_start, spans  # Alice's runs all ended before Bob's first began
    listed = json.loads(perflab("ls", "--json", "--store", pg_url).out)
    who = {e["name"]: (e["user"], e["controller_host"]) for e in listed}
    # perflab's record names them as labgrid does (LG_USERNAME, LG_HOSTNAME)
    assert who == {"alice-exp": ALICE, "bob-exp": BOB}, who


def test_a_dry_run_says_who_holds_the_place_and_what_it_lends(grid, sshd, place, tmp_path):
    grid.client("-p", place, "acquire", who=BOB)
    spec = write_spec(tmp_path, _spec(grid, sshd))
    r = subprocess.run(
        [sys.executable, "-m", "perflab", "run", str(spec), "--dry-run"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (
        f"host dut: labgrid place '{place}' on {grid.address}: held by bob@bob-desktop since "
    ) in r.stdout + r.stderr
    assert "lends NetworkService NetworkService" in r.stdout + r.stderr
    assert grid.holder(place) == "bob-desktop/bob"  # looked at, not taken


def test_a_place_that_does_not_exist_or_a_coordinator_not_there_is_one_line(grid, sshd, tmp_path):
    text = _spec(grid, sshd).replace(f'labgrid = "{PLACE}"', 'labgrid = "nowhere"')
    r = _run(tmp_path, text)
    assert r.finish() == 1
    assert "host 'dut': no labgrid place 'nowhere' on the coordinator" in r.stderr, r.stderr
    assert f"(places: {PLACE})" in r.stderr
    (tmp_path / "gone").mkdir()
    text = _spec(grid, sshd).replace(grid.address, "127.0.0.1:1")
    r = _run(tmp_path / "gone", text)
    assert r.finish() == 1
    assert "labgrid coordinator 127.0.0.1:1 does not answer: Connection refused" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("error") == 1, r.stderr


def test_a_coordinator_that_hangs_is_one_line_of_perflabs(grid, sshd, tmp_path):
    """A coordinator that accepts the connection and never answers: perflab's own line,
    bounded, and nothing of labgrid's logger (``ERROR:root:coordinator is unavailable``)."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepted by the kernel, never answered
    try:
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        r = _run(tmp_path, _spec(grid, sshd).replace(grid.address, address))
        assert r.finish() == 1
    finally:
        silent.close()
    assert f"labgrid coordinator {address}" in r.stderr, r.stderr
    assert "ERROR:root" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("error") == 1, r.stderr


def test_the_host_keys_are_checked_at_their_line(tmp_path):
    base = '[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n[[phase]]\nname = "p"\n'
    base += 'on = "dut"\ncommand = "true"\n[[metric]]\nname = "wall_time"\nbetter = "lower"\n'
    head = 'name = "x"\nbaseline = "a"\n[hosts.dut]\n'
    cases = {
        'labgrid = "p"\nssh = "root@10.0.0.2"\n': "both ssh and labgrid",
        'identity = "k"\n': "says neither where it is",
        'ssh = "root@10.0.0.2"\nlabgrid_timeout = "1s"\n': "labgrid_timeout is for labgrid",
        'labgrid = "p"\nlabgrid_coordinator = "a:b:c"\n': "bad labgrid coordinator address",
        'labgrid = "p"\n[hosts.dut.control]\nboot = "x"\n': "leave [hosts.dut.control] out",
    }
    for table, message in cases.items():
        spec = write_spec(tmp_path, head + table + base)
        r = perflab("run", str(spec), "--dry-run")
        assert r.code == 2 and message in r.err, (table, r.err)
        assert "spec.toml:" in r.err and "\n" not in r.err.strip(), r.err


ROUTER_SPEC = """\
name = "router"
baseline = "a"
repetitions = 1

[hosts.router]
labgrid = "router"
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
command = "echo v=$(uname -m | grep -c mips)"

[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def test_a_place_with_power_and_a_console_is_a_device_booted_from_here(lab, tmp_path):
    """The emulated router lent by a place with a NetworkPowerPort (a switch powering its
    VM) and a NetworkSerialPort (its console on TCP): perflab powers it off and on through
    labgrid's power driver before its first run, reaches it over SSH, keeps its console
    with the run, and powers it off at the end, before releasing the place."""
    ssh_port, console_port = free_port(), free_port()
    argv = vm_argv("router", ssh_port=ssh_port, console=f"tcp:{console_port}")
    env = {**os.environ, "PERFLAB_LAB_CACHE": str(lab.cache)}
    router = {
        "NetworkService": {"address": LOOPBACK, "username": "root", "port": ssh_port},
        "NetworkSerialPort": {"host": LOOPBACK, "port": console_port, "protocol": "raw"},
    }
    with Pdu(argv, tmp_path / "vm.log", env) as pdu:
        router["NetworkPowerPort"] = {"model": "simplerest", "host": pdu.url, "index": 0}
        with start_lab({"router": router}) as grid:
            grid.create_place("router", "router")
            options = ", ".join(f'"{o}"' for o in ssh_options(lab, "router"))
            text = ROUTER_SPEC.format(address=grid.address, identity=lab.identity, options=options)
            run = _run(tmp_path, text)
            assert run.finish(240) == 0, run.stderr
            assert pdu.events == ["off", "on", "off"] and not pdu.on, pdu.events
            assert grid.holder("router") is None
    with Database(tmp_path / "p.db") as s:
        record = s.environments(1)["router"]["labgrid"]
        assert record["power"] == "NetworkPowerPort"
        assert record["console"] == f"tcp://{LOOPBACK}:{console_port}"
        assert s.environments(1)["router"]["architecture"] == "mips"
        first = s.runs(1)[0]
        assert first.status == "ok"
        console = s.artifact(1, "console:router", first.id).decode(errors="replace")
        assert "perflab-lab: init: kernel" in console, console[-2000:]


def test_the_docs_exporter_configuration_runs_as_written(grid, tmp_path):
    """The exporter file of docs/running.md, copied as it stands, through a real
    labgrid-exporter: it starts and lends what the page says (labgrid reads the file as
    Jinja with '#' line statements: a comment as its first line stopped it)."""
    from labgrid_helpers import _program

    text = (Path(__file__).resolve().parents[2] / "docs" / "running.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    [exporter] = [b for b in blocks if "NetworkService:" in b]
    config = tmp_path / "exporter.yaml"
    config.write_text(exporter)
    log = open(tmp_path / "exporter.log", "wb")
    proc = subprocess.Popen(
        [_program("labgrid-exporter"), "-c", grid.address, "-n", "docs-host", str(config)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        lent = wait_until(
            lambda: (
                proc.poll() is not None
                or "docs-host/router-3/NetworkService" in grid.client("resources").stdout
            ),
            timeout=60,
        )
        said = (tmp_path / "exporter.log").read_text(errors="replace")
        assert lent and proc.poll() is None, said
        assert "TemplateSyntaxError" not in said
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
