"""Counters a device's control takes (``[hosts.NAME.control] counters``, a phase's
``counters_on``): read here before and after the phase, the difference its count — the
way the lab's emulated router gives its instruction count. The device here is a real sshd
on 127.0.0.1 booted by a command that does nothing; its "counter" a file the phase
itself moves on. The emulated router's own count: tests/hosts/test_devices.py."""

from __future__ import annotations

import pytest
from cli_helpers import perflab, write_spec
from perflab.store import Database
from sshd import start_sshd

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def sshd():
    with start_sshd() as srv:
        yield srv


def _spec(sshd, tmp_path, counters: str, printed: str, events: str = '["instructions"]') -> str:
    """Phase ``work`` on the device moves its counter file from 1000 to ``printed``'s
    count; ``counters`` is the control's command (``{file}``: the counter file)."""
    count = tmp_path / "count"
    count.write_text("instructions 1000\ncycles 10\n")
    return f"""\
name = "device-counters"
baseline = "a"
repetitions = 2
[hosts.dut]
{sshd.host_table()}[hosts.dut.control]
boot = "true"
counters = "{counters.format(file=count)}"
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "work"
on = "dut"
command = "printf '{printed}' > {count}"
counters = {events}
counters_on = "dut"
[[metric]]
name = "instructions"
counter = "instructions"
better = "lower"
"""


def _runs(db):
    with Database(db) as s:
        runs = s.runs(1)
        values = {(r, m): v for r, m, v in s.metrics(1)}
        arts = {r.id: s.artifact(1, "counters:work", r.id) for r in runs if r.status == "ok"}
    return runs, values, arts


def test_a_phase_counted_by_its_devices_control_gets_the_difference(sshd, tmp_path):
    spec = write_spec(
        tmp_path, _spec(sshd, tmp_path, "cat {file}", "instructions 1500\\ncycles 30\\n")
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    runs, values, arts = _runs(db)
    assert len(runs) == 4 and {x.status for x in runs} == {"ok"}
    # the first run moves the file from 1000 to 1500; every later one starts at 1500
    got = sorted(values[(x.id, "instructions")] for x in runs)
    assert got == [0.0, 0.0, 0.0, 500.0]
    first = next(x.id for x in runs if values[(x.id, "instructions")] == 500.0)
    assert (
        arts[first]
        == b"# before\ninstructions 1000\ncycles 10\n# after\ninstructions 1500\ncycles 30\n"
    )


@pytest.mark.parametrize(
    ("counters", "printed", "why"),
    [
        (
            "cat {file}",
            "instructions many\\n",
            "counters printed 'instructions many' on its line 1",
        ),
        ("cat {file}", "cycles 30\\n", "counters printed no 'instructions' (printed: cycles)"),
        ("cat {file}.missing", "x", "counters exited with status 1: cat: "),
    ],
    ids=["not-a-count", "event-missing", "command-fails"],
)
def test_a_device_counter_that_cannot_be_read_fails_the_run_saying_why(
    sshd, tmp_path, counters, printed, why
):
    spec = write_spec(tmp_path, _spec(sshd, tmp_path, counters, printed))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--max-failures", "0")
    assert r.code == 1, r.err
    with Database(db) as s:
        failed = [x for x in s.runs(1) if x.status == "failed"]
    assert failed and all("host 'dut'" in (x.reason or "") for x in failed), failed
    assert why in (failed[0].reason or ""), failed[0].reason


@pytest.mark.parametrize(
    ("edit", "line", "why"),
    [
        (
            ('counters_on = "dut"', 'counters_on = "dtu"'),
            'counters_on = "dtu"',
            "unknown host 'dtu'",
        ),
        (
            ('counters = "cat', 'console = "cat'),
            "counters_on",
            "host 'dut' has no counters command",
        ),
        (('counters = ["instructions"]', "counters = []"), "counters_on", "names no counters"),
        (('counters = ["instructions"]', 'counters = ["a b"]'), 'counters = ["a', "has a space"),
    ],
    ids=["unknown-host", "no-command", "no-events", "bad-event"],
)
def test_device_counters_written_wrong_are_bad_input_at_their_line(sshd, tmp_path, edit, line, why):
    text = _spec(sshd, tmp_path, "cat {file}", "x").replace(*edit)
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"))
    assert r.code == 2 and why in r.err, r.err
    at = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(line))
    assert f"{spec}:{at}:" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "p.db").exists()
