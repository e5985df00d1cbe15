"""Remote hosts over SSH against a real sshd on 127.0.0.1: the transport (one control
master, reconnect, one-line errors) and remote steps by the local rules (exit status,
output captured, timeout and stop end the step's whole process tree, leftovers held and
stopped, a dropped connection leaves nothing running on the host)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from perflab.hosts.remote import RemoteHost
from perflab.hosts.ssh import HostError, SshConnection, SshTarget
from perflab.hosts.step import StepRequest
from sshd import start_sshd

POLL_S = 15.0


@pytest.fixture(scope="module")
def sshd():
    with start_sshd() as srv:
        yield srv


def _host(srv, name="dut", **kw) -> SshTarget:
    opts = kw.pop("options", tuple(srv.options()))
    return SshTarget.parse(name, srv.destination, str(srv.identity), options=opts, **kw)


#: Both measurement paths: the native shim, and the portable sh path a host gets where the
#: shim cannot run (another architecture, a userland it cannot load on) or `stage = false`.
PATHS = ["perflab-exec", "sh"]


@pytest.fixture(params=PATHS)
def executor(sshd, tmp_path, request):
    ex = RemoteHost(
        SshConnection(_host(sshd)), workdir=str(tmp_path), stage=request.param == "perflab-exec"
    )
    told: list[str] = []
    ex.prepare(told.append)
    assert ex.measurement == request.param
    # the portable path is said once, with its cause; the shim's is silent
    assert len(told) == (request.param == "sh") and all("stage = false" in t for t in told)
    yield ex
    ex.conn.close()


def _step(ex, tmp_path, command, **kw):
    return ex.run(StepRequest(command, tmp_path, tmp_path / "out", tmp_path / "err", **kw))


def _until(predicate, what: str) -> None:
    deadline = time.monotonic() + POLL_S
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {POLL_S} s: {what}")


def _running(ex, marker: str) -> bool:
    """A process whose command line matches ``marker`` (a regex) runs on the host. The
    first character goes in brackets so that the pattern does not match the shell that
    runs pgrep with it."""
    pattern = f"[{marker[0]}]{marker[1:]}"
    out = ex.conn.run(f"pgrep -f '{pattern}' >/dev/null && echo yes || echo no").stdout
    return out.strip() == b"yes"


def test_destinations_parse_as_ssh_reads_them():
    assert SshTarget.parse("a", "root@10.0.0.2:2222") == SshTarget("a", "root@10.0.0.2", 2222)
    assert SshTarget.parse("b", "lab-dut").destination == "lab-dut"
    assert SshTarget.parse("c", "me@[::1]:22") == SshTarget("c", "me@::1", 22)
    for bad in ("root@", "a b", "x:99999", "@host"):
        with pytest.raises(ValueError, match=r"ssh destination|bad port"):
            SshTarget.parse("d", bad)


def test_commands_share_one_connection_and_files_round_trip(sshd, tmp_path):
    conn = SshConnection(_host(sshd))
    try:
        conn.connect()
        assert conn.control_path.exists()  # the control master every command reuses
        assert conn.run("echo $((6 * 7))").stdout == b"42\n"
        conn.put(b"\x00binary\xff", f"{tmp_path}/staged/file")
        assert conn.read(f"{tmp_path}/staged/file") == b"\x00binary\xff"
        # The master dies (network blip): the next command reconnects by itself.
        subprocess.run([*conn.ssh_argv()[:-1], "-O", "exit", conn.host.destination], check=True)
        assert conn.run("echo again").stdout == b"again\n"
    finally:
        conn.close()
    assert not conn.control_path.exists()


def test_unknown_host_key_is_one_line_saying_how_to_accept_it(sshd, tmp_path):
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    host = _host(sshd, options=(f"UserKnownHostsFile={known}", "StrictHostKeyChecking=yes"))
    with pytest.raises(HostError) as e:
        SshConnection(host).connect()
    msg = e.value.one_line()
    assert "\n" not in msg and "host 'dut'" in msg and "Host key verification failed" in msg
    assert "StrictHostKeyChecking=accept-new" in msg


def test_unreachable_host_is_an_error_naming_it(sshd):
    host = SshTarget.parse("gone", f"{sshd.user}@127.0.0.1:1", str(sshd.identity))
    with pytest.raises(HostError, match=r"host 'gone' \(.*:1\): cannot connect: .*refused"):
        SshConnection(host).connect()


def test_remote_step_status_output_env_and_workdir(executor, tmp_path, monkeypatch):
    # the step's scratch folder on the host, named here: other tests' steps may run at once
    token = secrets.token_hex(8)
    monkeypatch.setattr("perflab.hosts.remote.secrets.token_hex", lambda n: token)
    r = _step(executor, tmp_path, 'echo "out $X"; echo err >&2; pwd; exit 3', env={"X": "a b"})
    assert r.exit_code == 3 and not r.ok
    assert (tmp_path / "out").read_text() == f"out a b\n{tmp_path}\n"
    assert (tmp_path / "err").read_text() == "err\n"
    if executor.measurement == "perflab-exec":
        assert r.max_rss_kib > 0 and r.measured_by == "perflab-exec"
    else:  # not measured there: no figure, never a zero
        assert r.max_rss_kib is None and r.measured_by.startswith("sh (date +%s%N, times")
    # the host's scratch folder (this machine's /tmp: the sshd is here) was removed
    assert not list(Path("/tmp").glob(f"perflab-step-*-{token}"))


def test_remote_step_measures_cpu_and_wall_time(executor, tmp_path):
    r = _step(executor, tmp_path, "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
    assert r.ok and r.user_s + r.system_s > 0.05  # the loop's CPU, seen by either path
    assert r.wall_s >= (r.user_s + r.system_s) * 0.5  # one core: wall is about the CPU time
    exit_9 = _step(executor, tmp_path, "kill -9 $$")
    assert exit_9.signal == 9 and exit_9.exit_code is None


def test_remote_timeout_ends_the_whole_tree(executor, tmp_path):
    r = _step(executor, tmp_path, "sleep 31.25 & sleep 31.5; wait", timeout=1.0, kill_grace=0.5)
    assert r.timed_out and not r.ok
    _until(lambda: not _running(executor, "sleep 31.[25]"), "the timed-out step's processes end")


def test_remote_stop_request_interrupts(executor, tmp_path):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    r = _step(executor, tmp_path, "sleep 32.5", stop=stop, kill_grace=0.5)
    assert r.interrupted
    _until(lambda: not _running(executor, "sleep 32.5"), "the stopped step's process ends")


def test_remote_leftovers_are_held_then_stopped(executor, tmp_path):
    # A daemon that detaches (double fork + setsid), as `memcached -d` does.
    r = _step(executor, tmp_path, "setsid sh -c 'sleep 33.5 &' ; echo started", kill_grace=0.5)
    assert r.ok and r.lingering is not None
    assert any("sleep 33.5" in p for p in r.lingering.processes())
    assert _running(executor, "sleep 33.5")
    stopped = r.lingering.stop()
    assert any("sleep 33.5" in p for p in stopped)
    _until(lambda: not _running(executor, "sleep 33.5"), "the held daemon ends")


@pytest.mark.parametrize("path", PATHS)
def test_a_dropped_connection_leaves_nothing_on_the_host(sshd, tmp_path, path):
    ex = RemoteHost(SshConnection(_host(sshd)), workdir=str(tmp_path), stage=path == "perflab-exec")
    ex.prepare()
    watcher = SshConnection(_host(sshd, name="watcher"))
    try:
        cut = threading.Timer(
            1.0,
            lambda: subprocess.run(
                [*ex.conn.ssh_argv()[:-1], "-O", "exit", ex.conn.host.destination]
            ),
        )
        cut.start()
        with pytest.raises(HostError, match=r"host 'dut'.*step lost"):
            _step(ex, tmp_path, "sleep 34.5 & sleep 34.25; wait")
        cut.join()
        _until(
            lambda: watcher.run("pgrep -f '[s]leep 34.[25]' || echo none").stdout == b"none\n",
            "the step's processes end after its connection dropped",
        )
    finally:
        ex.conn.close()
        watcher.close()


def test_the_next_connection_removes_the_step_folders_a_killed_perflab_left(sshd, tmp_path):
    """A step folder on the host is named after the perflab that made it (this machine, its
    PID and start time): the next connection removes those of this machine's perflabs that
    are gone (killed: nobody fetched them), and keeps those of a perflab still running and
    of other machines."""
    from perflab.hosts.process import process_start_time
    from perflab.hosts.remote import STEP_PREFIX, _machine_tag, _step_folder

    token = secrets.token_hex(4)
    dead = subprocess.Popen(["true"])
    dead.wait()  # a PID no process has any more (its start time then: none)
    me = f"{os.getpid()}-{process_start_time(os.getpid())}"
    folders = {
        "killed": f"{STEP_PREFIX}{_machine_tag()}-{dead.pid}-123-{token}",
        "reused": f"{STEP_PREFIX}{_machine_tag()}-{os.getpid()}-1-{token}",  # a PID reused since
        "running": f"{STEP_PREFIX}{_machine_tag()}-{me}-{token}",
        "elsewhere": f"{STEP_PREFIX}0123abcd-{dead.pid}-123-{token}",  # another machine's
    }
    assert _step_folder().startswith(f"{STEP_PREFIX}{_machine_tag()}-{me}-")
    try:
        for d in folders.values():
            Path(d).mkdir()
        ex = RemoteHost(SshConnection(_host(sshd)), workdir=str(tmp_path))
        ex.prepare()
        ex.conn.close()
        left = {name for name, d in folders.items() if Path(d).exists()}
        assert left == {"running", "elsewhere"}
    finally:
        for d in folders.values():
            shutil.rmtree(d, ignore_errors=True)


def _masters(folder: Path) -> list[int]:
    """PIDs of ssh control masters whose socket is in ``folder``."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"ssh") and str(folder).encode() in cmd:
                found.append(int(p.name))
    return found


def test_a_stale_folder_goes_when_its_master_removed_its_socket_meanwhile(tmp_path, monkeypatch):
    """A master told to exit removes its own socket: when it does so between the sweep's
    listing of the folder and its unlinking, the folder still goes (a suite run once left
    it, the unlink's error ending the sweep of that folder)."""
    from perflab.hosts.ssh import CONTROL_PREFIX, sweep_control_folders

    # an owner that is gone: no process has that pid (above any pid_max)
    folder = tmp_path / f"{CONTROL_PREFIX}999999999-1-x"
    folder.mkdir()
    (folder / "left.sock").write_text("")
    listed = Path.iterdir

    def listing(self):  # the folder as listed just before its master removed gone.sock
        yield from listed(self)
        if self == folder:
            yield folder / "gone.sock"

    monkeypatch.setattr(Path, "iterdir", listing)
    assert sweep_control_folders(tmp_path) == [folder]
    assert not folder.exists()


def test_a_killed_perflabs_control_master_is_ended_by_the_next(sshd, tmp_path):
    """perflab killed outright cannot end its control master (ControlPersist keeps it, its
    parent gone): the folder of sockets is named after its owner, and the next perflab to
    connect anywhere ends the masters of a folder whose owner is gone, and removes it —
    never a folder of a perflab still running."""
    from perflab.hosts.ssh import CONTROL_PREFIX, control_folder

    # a perflab killed while connected: a child process that opens a master, then SIGKILL
    code = (
        "import sys, time\n"
        "from perflab.hosts.ssh import SshConnection, SshTarget\n"
        f"c = SshConnection(SshTarget.parse('dut', {sshd.destination!r}, {str(sshd.identity)!r}, "
        f"options=tuple({list(sshd.options())!r})))\n"
        "c.run('true')\n"
        "print(c.control_dir, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        folder = Path(proc.stdout.readline().strip())
        assert folder.name.startswith(CONTROL_PREFIX), proc.stderr.read() if proc.poll() else ""
        _until(lambda: bool(_masters(folder)), "the control master runs")
    finally:
        proc.kill()
        proc.wait()
    assert _masters(folder) and folder.exists()  # left behind by the killed one
    mine = control_folder()  # what the next perflab does first
    try:
        _until(lambda: not _masters(folder), "the stale master is ended")
        assert not folder.exists()
        assert mine.exists()  # a running perflab's own folder stays
        control_folder().rmdir()
        assert mine.exists()
    finally:
        shutil.rmtree(mine, ignore_errors=True)
