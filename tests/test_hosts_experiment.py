"""An experiment whose steps run on a host over SSH (a real sshd on 127.0.0.1): setup,
phases and hooks placed with `on`, the host's environment recorded beside this
machine's, which host each step ran on in every run's record; an unknown host name is
bad input at file:line; an unreachable host stops the experiment before any run."""

from __future__ import annotations

import pytest
from cli_helpers import perflab, write_spec
from perflab.store import Store
from sshd import start_sshd

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def sshd():
    with start_sshd() as srv:
        yield srv


def _spec(tmp_path, host_table: str, phase_on: str = "dut") -> str:
    marker = tmp_path / "remote-marker"
    return f"""\
name = "remote"
baseline = "a"
repetitions = 2
before_each = {{ command = "echo reset >> {marker}.hook", on = "dut" }}

[hosts.dut]
{host_table}
[[variant]]
name = "a"
on = "dut"
setup = "echo setup-{{variant}} >> {marker}.setup"
params = {{ v = 100 }}
[[variant]]
name = "b"
params = {{ v = 150 }}
[[phase]]
name = "p"
on = "{phase_on}"
command = "echo v=$(( {{v}} + {{repetition}} )) host=$(cat {marker}.id)"
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def test_steps_run_where_on_says_and_the_record_says_where(sshd, tmp_path):
    (tmp_path / "remote-marker.id").write_text("the-dut\n")
    spec = write_spec(tmp_path, _spec(tmp_path, sshd.host_table()))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Store(db) as s:
        runs = s.runs(1)
        assert [x.status for x in runs] == ["ok"] * 4
        hosts = s.environments(1)
        assert "dut" in hosts and len(hosts) == 2  # this machine and the host
        assert hosts["dut"]  # captured over SSH: kernel, CPU, memory...
        for run in runs:
            placed = dict(
                line.split("\t") for line in s.artifact(1, "hosts", run.id).decode().splitlines()
            )
            assert placed["phase:p"] == "dut" and placed["before_each"] == "dut"
            assert placed.get("setup", "dut") == "dut"  # only variant a has a setup
            out = s.artifact(1, "stdout:phase:p", run.id).decode()
            assert "host=the-dut" in out
    # The hook ran before each of the 4 runs, variant a's setup before each of its 2.
    assert (tmp_path / "remote-marker.hook").read_text().count("reset") == 4
    assert (tmp_path / "remote-marker.setup").read_text().split() == ["setup-a"] * 2


def test_unknown_host_is_bad_input_at_its_line(sshd, tmp_path):
    spec = write_spec(tmp_path, _spec(tmp_path, sshd.host_table(), phase_on="dtu"))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 2
    line = next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if 'on = "dtu"' in t)
    assert f"spec.toml:{line}" in r.err and "unknown host 'dtu'" in r.err
    assert "did you mean 'dut'" in r.err.lower() or "dut" in r.err
    assert not db.exists()


def test_bad_destination_is_bad_input(tmp_path):
    spec = write_spec(tmp_path, _spec(tmp_path, 'ssh = "root@"'))
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert r.code == 2 and "bad ssh destination" in r.err and "\n" not in r.err.strip()


def test_unreachable_host_stops_before_any_run(sshd, tmp_path):
    table = f'ssh = "{sshd.user}@127.0.0.1:1"\nidentity = "{sshd.identity}"\n'
    spec = write_spec(tmp_path, _spec(tmp_path, table))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 1, r.err
    assert "host 'dut'" in r.err and "cannot connect" in r.err and "Traceback" not in r.err
    with Store(db) as s:
        assert {x.status for x in s.runs(1)} == {"pending"}  # resumable once the host is back
