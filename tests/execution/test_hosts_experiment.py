"""An experiment whose steps run on a host over SSH (a real sshd on 127.0.0.1): setup,
phases and hooks placed with `on`, the host's environment recorded beside this
machine's, which host each step ran on in every run's record; an unknown host name is
bad input at file:line; an unreachable host stops the experiment before any run."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess

import pytest
from cli_helpers import perflab, perflab_process, write_spec
from perflab.store import Database
from proc_helpers import gone, live, marker_sleep, wait_until
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
    with Database(db) as s:
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
    with Database(db) as s:
        assert {x.status for x in s.runs(1)} == {"pending"}  # resumable once the host is back


def _kernel_spec(tmp_path, host_table: str, kernel_a: str, kernel_b: str, extra: str = "") -> str:
    return f"""\
name = "kernels"
baseline = "a"
repetitions = 2
[matrix]
size = [1, 2]
[hosts.dut]
{host_table}boot = "true"
boot_timeout = "1s"
{extra}
[[variant]]
name = "a"
on = "dut"
kernel = "{kernel_a}"
[[variant]]
name = "b"
on = "dut"
kernel = "{kernel_b}"
[[phase]]
name = "p"
on = "dut"
command = "echo v=$(( {{size}} + {{repetition}} ))"
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def test_runs_on_the_variants_kernel_are_recorded_with_it(sshd, tmp_path):
    import platform

    running = platform.release()  # the sshd is on this machine: its kernel is this one
    word = open("/proc/cmdline").read().split()[0]
    spec = write_spec(tmp_path, _kernel_spec(tmp_path, sshd.host_table(), running, running))
    text = spec.read_text().replace(
        f'kernel = "{running}"\n[[variant]]\nname = "b"',
        f'kernel = "{running}"\ncmdline = "{word}"\n[[variant]]\nname = "b"',
    )
    spec.write_text(text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert "booted" not in r.err  # it runs the right kernel already: no boot
    with Database(db) as s:
        for run in s.runs(1):
            host, kernel, boot_id, cmdline = s.artifact(1, "kernel", run.id).decode().split("\t")
            assert (host, kernel) == ("dut", running) and len(boot_id) >= 32 and word in cmdline


def test_a_host_that_does_not_boot_into_the_kernel_records_no_run(sshd, tmp_path):
    import platform

    spec = write_spec(
        tmp_path,
        _kernel_spec(tmp_path, sshd.host_table(), platform.release(), "0.0.0-not-this-one"),
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--max-failures", "0")
    assert r.code == 1, r.err
    with Database(db) as s:
        runs = s.runs(1)
        ok = [x for x in runs if x.variant == "a"]
        bad = [x for x in runs if x.variant == "b"]
        assert {x.status for x in ok} == {"ok"} and {x.status for x in bad} == {"failed"}
        for x in bad:
            assert "did not come back from `true` within 1 s" in x.reason, x.reason
        measured = {run_id for run_id, _, _ in s.metrics(1)}
        assert measured == {x.id for x in ok}  # no value recorded from the wrong kernel


def test_dry_run_says_how_many_boots(sshd, tmp_path):
    spec = write_spec(tmp_path, _kernel_spec(tmp_path, sshd.host_table(), "6.1-a", "6.1-b"))
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 0, r.err
    # 2 blocks × 2 variants, each variant's runs of a block together: 4 kernel changes at
    # most (the interleaved order may put the same variant last and first: then fewer).
    boots = int(r.out.split("host dut: up to ")[1].split()[0])
    assert 2 <= boots <= 4
    order = [line.split()[-2] for line in r.out.splitlines() if "block" in line]
    changes = sum(1 for x, y in itertools.pairwise(order) if x != y) + 1
    assert boots == changes


def test_a_kernel_on_this_machine_is_bad_input(tmp_path):
    spec = write_spec(
        tmp_path,
        _kernel_spec(tmp_path, 'ssh = "root@127.0.0.1:22"\n', "6.1-a", "6.1-b").replace(
            'name = "a"\non = "dut"', 'name = "a"'
        ),
    )
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 2 and "cannot reboot under itself" in r.err


def test_a_connection_lost_mid_run_fails_that_run_and_the_experiment_goes_on(sshd, tmp_path):
    # The first run's phase kills the sshd process that carries its host's connection (the
    # first sshd among its ancestors): that step is lost with its connection. perflab
    # reconnects for the next steps; no other run is lost, none is run twice.
    kill_own_connection = (
        "p=$$; while [ $p -gt 1 ]; do case $(cat /proc/$p/comm) in sshd*) kill -9 $p; exit 0;; "
        "esac; p=$(cut -d' ' -f4 /proc/$p/stat); done"
    )
    text = _spec(tmp_path, sshd.host_table()).replace(
        'command = "echo v=',
        f'command = "[ {{run}} = 1 ] && {{ {kill_own_connection}; }}; echo v=',
    )
    (tmp_path / "remote-marker.id").write_text("the-dut\n")
    spec = write_spec(tmp_path, text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1, r.err  # a failed run: exit 1
    assert "Traceback" not in r.err
    with Database(db) as s:
        runs = sorted(s.runs(1), key=lambda x: x.order_index)
        assert [x.status for x in runs] == ["failed", "ok", "ok", "ok"]
        assert "phase:p" in runs[0].reason and "lost" in runs[0].reason, runs[0].reason
        assert "\n" not in runs[0].reason
        assert [x.attempts for x in runs] == [1, 1, 1, 1]  # none repeated
        measured = {run_id for run_id, _, _ in s.metrics(1)}
        assert measured == {x.id for x in runs[1:]}
    # The hook ran before each of the 4 runs, over the connection re-opened after the loss.
    assert (tmp_path / "remote-marker.hook").read_text().count("reset") == 4


def _files_spec(tmp_path, host_table: str, fetch: str) -> str:
    return f"""\
name = "files"
baseline = "a"
repetitions = 1
[hosts.dut]
{host_table}workdir = "{tmp_path / "dut-home"}"
files = ["tools/emit.sh"]
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
on = "dut"
command = "sh emit.sh {{variant}} > result-{{variant}}.json && echo v=1"
fetch = [{fetch}]
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def test_files_are_staged_to_a_host_and_a_phase_s_files_fetched_back(sshd, tmp_path):
    (tmp_path / "dut-home").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "emit.sh").write_text('printf \'{"variant": "%s"}\\n\' "$1"\n')
    spec = write_spec(tmp_path, _files_spec(tmp_path, sshd.host_table(), '"result-{variant}.json"'))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert (tmp_path / "dut-home" / "emit.sh").read_text().startswith("printf")  # staged there
    with Database(db) as s:
        for run in s.runs(1):
            name = f"file:p:result-{run.variant}.json"
            assert s.artifact(1, name, run.id) == f'{{"variant": "{run.variant}"}}\n'.encode()


def test_a_file_to_fetch_that_is_missing_fails_the_run(sshd, tmp_path):
    (tmp_path / "dut-home").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "emit.sh").write_text("true\n")
    spec = write_spec(tmp_path, _files_spec(tmp_path, sshd.host_table(), '"nowhere.json"'))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1
    with Database(db) as s:
        for run in s.runs(1):
            assert run.status == "failed"
            assert run.reason == "phase:p: fetch nowhere.json: no such file on host 'dut'"
        assert not list(s.metrics(1))  # no value from a run that failed


def test_a_host_file_that_does_not_exist_is_bad_input_at_its_line(tmp_path):
    text = _files_spec(tmp_path, 'ssh = "root@127.0.0.1:22"\n', '"x"')
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--dry-run")
    line = text.splitlines().index('files = ["tools/emit.sh"]') + 1
    assert r.code == 2 and f":{line}:" in r.err and "no such file" in r.err, r.err


def test_a_killed_perflab_leaves_nothing_running_on_its_host(sshd, tmp_path):
    """perflab killed outright (SIGKILL: no handler runs) while a step runs on a host: the
    session's stdin, which perflab held, reaches its end, and the step's shim on the host
    stops it (`perflab-exec -W`) — the connection's control master would keep the session
    open — and the ssh client ends with the session: nothing is left on either machine."""
    sleeper = marker_sleep(tmp_path)
    text = _spec(tmp_path, sshd.host_table()).replace(
        'command = "echo v=', f'command = "{sleeper} 300; echo v='
    )
    (tmp_path / "remote-marker.id").write_text("the-dut\n")
    spec = write_spec(tmp_path, text)
    proc = perflab_process("run", str(spec), "--store", str(tmp_path / "p.db"), "--no-compare")
    try:
        wait_until(
            lambda: len(live(sleeper)) >= 3
        )  # this machine's client, the host's shim and sleep
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert gone(sleeper), "the step's processes outlived perflab"
    finally:
        proc.kill()
        proc.communicate()
        for pid in live(sleeper):  # (a failed test's leftovers, not the next test's)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_dry_run_connects_and_says_how_each_host_is_measured(sshd, tmp_path):
    staged = _spec(tmp_path, sshd.host_table())
    r = perflab("run", str(write_spec(tmp_path, staged)), "--dry-run")
    assert r.code == 0, r.err
    assert "host dut: x86_64 Linux, steps measured by perflab-exec" in r.out
    portable = staged.replace("[hosts.dut]\n", "[hosts.dut]\nstage = false\n")
    assert portable != staged
    r = perflab("run", str(write_spec(tmp_path, portable)), "--dry-run")
    assert r.code == 0, r.err
    assert "host dut: x86_64 Linux, steps measured by the portable sh path" in r.out
    assert "stage = false for this host" in r.out


def test_dry_run_refuses_an_unreachable_host_in_one_line(tmp_path):
    from servers import free_port

    text = _spec(tmp_path, f'ssh = "root@127.0.0.1:{free_port()}"\n')
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code != 0 and "host 'dut'" in r.err and "cannot connect" in r.err, r.err
    assert len(r.err.strip().splitlines()) <= 2 and "Traceback" not in r.err


@pytest.mark.parametrize(
    ("host", "scope", "why"),
    [
        ('reset = "each-run"\n', "variant", "is booted before every run"),
        ('reset = "each-run"\n', "experiment", "boots during the experiment"),
        ('[hosts.dut.control]\nboot = "true"\n', "experiment", "boots during the experiment"),
    ],
)
def test_a_service_that_a_boot_would_end_is_bad_input_at_its_line(tmp_path, host, scope, why):
    text = f"""\
name = "svc"
baseline = "a"
[hosts.dut]
ssh = "root@127.0.0.1:22"
{host}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[service]]
name = "db"
on = "dut"
port = 5432
scope = "{scope}"
command = "postgres"
[[phase]]
name = "p"
command = "true"
[[metric]]
name = "wall_time"
phase = "p"
better = "lower"
"""
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    line = text.splitlines().index(f'scope = "{scope}"') + 1
    assert r.code == 2 and f":{line}:" in r.err and why in r.err and 'scope = "run"' in r.err, r.err


def test_a_host_that_dies_mid_experiment_fails_its_runs_and_stalls_nothing(tmp_path):
    """The host's sshd and every session it serves are killed during run 2: that run and
    every later one fail naming the host, and perflab finishes having given the dead host
    one round of connection attempts per run — the reads of the system snapshots that
    follow fail at once instead of each making its own round (about 7 s each: minutes per
    snapshot). Every ssh perflab starts is counted, with how it ended, by a wrapper first
    on PATH."""
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    calls = tmp_path / "ssh-calls"
    real = subprocess.run(["sh", "-c", "command -v ssh"], capture_output=True, text=True)
    (wrapper / "ssh").write_text(
        f'#!/bin/sh\n"{real.stdout.strip()}" "$@"; s=$?; echo "$s" >> {calls}; exit $s\n'
    )
    (wrapper / "ssh").chmod(0o755)
    with start_sshd() as srv:
        pid = srv.proc.pid
        kill = f"kill -9 $(cat /proc/{pid}/task/{pid}/children) {pid}"
        text = srv.one_phase_spec(
            repetitions=3,
            settings="max_failures = 100",
            before=f'[[phase]]\nname = "kill"\ncommand = "if [ {{run}} -eq 2 ]; then {kill}; fi"',
        )
        db = tmp_path / "p.db"
        p = perflab_process(
            "run",
            str(write_spec(tmp_path, text)),
            "--store",
            str(db),
            env={**os.environ, "NO_COLOR": "1", "PATH": f"{wrapper}:{os.environ['PATH']}"},
        )
        try:
            _out, err = p.communicate(timeout=400)  # a guard against a stall, not a target
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert p.returncode == 1, err
    with Database(db) as s:
        runs = sorted(s.runs(1), key=lambda r: r.order_index)
        assert s.experiment(1).status == "complete"
    assert runs[0].status == "ok"
    assert all(r.status == "failed" and "'dut'" in (r.reason or "") for r in runs[1:]), [
        r.reason for r in runs
    ]
    failed = calls.read_text().split().count("255")  # ssh's own failures: the dead host
    # a round of connection attempts (5) and the step's own attempt, per failed run, and a
    # few more for the first discovery; without the host marked down, each snapshot read
    # made its own round: hundreds
    assert failed <= 7 * (len(runs) - 1) + 10, failed


@pytest.mark.parametrize(
    "host",
    [
        'boot = "kexec {kernal}"\n',
        '[hosts.dut.control]\nboot = "start-vm {kernel} {slat}"\n',
        '[hosts.dut.control]\nboot = "start-vm"\nconsole = "cmd:picocom {tty}"\n',
    ],
)
def test_a_boot_command_naming_an_unknown_parameter_is_bad_input(tmp_path, host):
    text = _spec(tmp_path, 'ssh = "root@127.0.0.1:22"\n' + host)
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code == 2 and "unknown parameter" in r.err and "{kernel}, {cmdline}" in r.err, r.err
    assert "Traceback" not in r.err
