"""An experiment that an error stops outside its runs (a host unreachable at connect,
before_all failing, an experiment-scope service that does not start) is never left
`running`: it is `stopped`, the reason kept and shown by `perflab ls`, its runs pending,
and `perflab run --resume` finishes it once the cause is gone."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from cli_helpers import perflab, write_spec
from perflab.store import Database
from sshd import start_sshd

pytestmark = pytest.mark.server

METRIC = """
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def _stopped(db, why: str) -> None:
    """The experiment is `stopped` with ``why`` in its reason, everywhere it shows."""
    with Database(db) as s:
        assert s.experiment(1).status == "stopped"
        assert {x.status for x in s.runs(1)} == {"pending"}
    [listed] = json.loads(perflab("ls", "--store", str(db), "--json").out)
    assert listed["status"] == "stopped" and why in listed["reason"], listed
    table = perflab("ls", "--store", str(db)).out
    assert "stopped" in table and "0/4" in table and "running" not in table
    assert "experiment 1 stopped: " in table and why in table


def test_an_unreachable_host_stops_the_experiment_and_resume_finishes_it(tmp_path):
    with start_sshd() as srv:
        spec = write_spec(tmp_path, srv.one_phase_spec(repetitions=2))
        db = tmp_path / "p.db"
        srv.proc.terminate()  # the host goes away: its port is closed
        srv.proc.wait()
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
        assert r.code == 1, r.err
        assert "cannot connect" in r.err and "Traceback" not in r.err
        assert len(r.err.strip().splitlines()) <= 2  # the progress header, the error
        _stopped(db, "cannot connect")
        # the host is back, on the same port with the same keys: resume finishes it
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        srv.proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(srv.workdir / "sshd_config")],
            stdout=srv._log,
            stderr=subprocess.STDOUT,
        )
        srv._wait_ready()
        r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
        assert r.code == 0, r.err
    with Database(db) as s:
        assert s.experiment(1).status == "complete"
        assert {x.status for x in s.runs(1)} == {"ok"}
    assert json.loads(perflab("ls", "--store", str(db), "--json").out)[0]["status"] == "complete"


def test_the_corrected_spec_replaces_an_experiment_that_never_started(tmp_path):
    """A spec naming a host that is not there (a misspelt address or place) stops before
    any run; its corrected spec is a new experiment and takes the stopped one's place: a
    mistake leaves no empty experiment in the store (the hint says so)."""
    with start_sshd() as srv:
        good = srv.one_phase_spec(repetitions=2)
        wrong = re.sub(r"127\.0\.0\.1:[0-9]+", "127.0.0.1:1", good, count=1)  # nothing there
        assert wrong != good
        db = tmp_path / "p.db"
        r = perflab("run", str(write_spec(tmp_path, wrong)), "--store", str(db), "--no-compare")
        assert r.code == 1 and "run the corrected spec (it replaces this experiment)" in r.err
        r = perflab("run", str(write_spec(tmp_path, good)), "--store", str(db), "--no-compare")
        assert r.code == 0, r.err
    listed = json.loads(perflab("ls", "--store", str(db), "--json").out)
    assert [e["status"] for e in listed] == ["complete"], listed  # the stopped one is gone


@pytest.mark.parametrize(
    ("stage", "why"),
    [
        ('before_all = "test -e {ok} || {{ echo no-ok-file >&2; exit 3; }}"\n', "no-ok-file"),
        (
            (
                '[[service]]\nname = "once"\nscope = "experiment"\nready = "log:^up$"\n'
                'command = "test -e {ok} || {{ echo no-ok-file >&2; exit 3; }}; echo up; '
                'exec sleep 600"\n'
            ),
            "service 'once' did not start",
        ),
    ],
)
def test_an_error_before_the_first_run_stops_the_experiment_resumably(tmp_path, stage, why):
    ok = tmp_path / "ok"
    spec = write_spec(
        tmp_path,
        f"""\
name = "local"
baseline = "a"
repetitions = 2
{stage.format(ok=ok)}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
command = "echo v=1"
"""
        + METRIC,
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code in (1, 2) and "Traceback" not in r.err, r.err
    assert "no-ok-file" in r.err
    _stopped(db, why)
    ok.write_text("")  # the cause is gone
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        assert s.experiment(1).status == "complete"
        assert {x.status for x in s.runs(1)} == {"ok"}


def test_a_refused_second_runner_leaves_no_folder_behind(tmp_path):
    """While one perflab runs an experiment, a second one asked to resume it is refused
    in one line, and leaves nothing behind (its folder of ssh control sockets went too)."""
    import os
    import tempfile
    import time
    from pathlib import Path

    from cli_helpers import perflab_process

    with start_sshd() as srv:
        slow = '[[phase]]\nname = "wait"\ncommand = "sleep 30"\nmeasure = false\n'
        spec = write_spec(tmp_path, srv.one_phase_spec(before=slow))
        db = tmp_path / "p.db"
        first = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if db.exists():
                    with Database(db) as st:
                        if any(r.status == "running" for r in st.runs(1)):
                            break
                time.sleep(0.1)
            mine = f"perflab-ssh-{os.getpid()}-"
            before = {p.name for p in Path(tempfile.gettempdir()).glob(f"{mine}*")}
            r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
            assert r.code != 0 and "is being run by process" in r.err, r.err
            after = {p.name for p in Path(tempfile.gettempdir()).glob(f"{mine}*")}
            assert after <= before, after - before
        finally:
            first.terminate()
            first.communicate(timeout=60)
