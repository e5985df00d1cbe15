"""perf counters as metrics: real `perf stat` around real commands with known counts,
the CSV parser on perf's odd cases, unsupported events as one-line failures, and names
checked when the spec loads."""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest
from cli_helpers import perflab, write_spec
from perflab.observe.counters import CounterError, parse_perf_stat

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")

TOUCH = """\
import mmap, sys
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n)
if hasattr(mmap, "MADV_NOHUGEPAGE"):
    m.madvise(mmap.MADV_NOHUGEPAGE)  # one fault per 4 KiB page, never a huge page
for i in range(0, n, mmap.PAGESIZE):
    m[i] = 1
"""
SLEEPS = "import sys, time\nfor _ in range(int(sys.argv[1])): time.sleep(0.0001)\n"

SPEC = """\
name = "counters"
baseline = "small"
repetitions = 3
[[variant]]
name = "small"
params = {{ mib = 4, k = 50 }}
[[variant]]
name = "big"
params = {{ mib = 64, k = 2000 }}
[[phase]]
name = "work"
command = "{python} touch.py {{mib}} && {python} sleeps.py {{k}}"
counters = [{counters}]
[[metric]]
name = "faults"
counter = "page-faults"
better = "lower"
[[metric]]
name = "switches"
counter = "context-switches"
better = "lower"
"""


def _values(db: Path) -> dict[tuple[str, str], list[float]]:
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT r.variant, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
        ).fetchall()
    out: dict[tuple[str, str], list[float]] = {}
    for variant, name, value in rows:
        out.setdefault((variant, name), []).append(value)
    return out


def _setup(tmp_path: Path, counters: str) -> Path:
    (tmp_path / "touch.py").write_text(TOUCH)
    (tmp_path / "sleeps.py").write_text(SLEEPS)
    return write_spec(tmp_path, SPEC.format(python=shutil.which("python3"), counters=counters))


@needs_perf
def test_page_faults_and_context_switches_counted_and_compared(tmp_path):
    spec = _setup(tmp_path, '"page-faults", "context-switches", "task-clock"')
    db = tmp_path / "db.sqlite"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    v = _values(db)
    page = 4096
    # every run of big touched 64 MiB of fresh pages: at least one fault per page
    assert all(f >= (64 << 20) // page for f in v[("big", "faults")])
    assert all(f >= (4 << 20) // page for f in v[("small", "faults")])
    # the 60 MiB difference shows as (nearly) one fault per page
    extra = statistics.fmean(v[("big", "faults")]) - statistics.fmean(v[("small", "faults")])
    assert extra >= 0.9 * (60 << 20) // page
    # 2,000 sleeps block 2,000 times; 50 do not
    assert all(s >= 2000 for s in v[("big", "switches")])
    assert min(v[("big", "switches")]) > max(v[("small", "switches")]) + 1000
    c = perflab("compare", "last", "--store", str(db), "--json")
    doc = json.loads(c.out)
    faults = next(x for x in doc["comparisons"] if x["metric"] == "faults")
    assert faults["significant"] and faults["low"] > 0  # an interval, and it says "more"
    with sqlite3.connect(db) as conn:  # perf's own CSV kept with each run
        names = {n for (n,) in conn.execute("SELECT name FROM artifacts")}
    assert "counters:work" in names


@needs_perf
@pytest.mark.skipif(
    any(Path("/sys/bus/event_source/devices").glob("cpu*")), reason="this machine has a PMU"
)
def test_hardware_event_without_pmu_is_one_line_failure(tmp_path):
    spec = _setup(tmp_path, '"page-faults", "context-switches", "cycles"')
    db = tmp_path / "db.sqlite"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1
    with sqlite3.connect(db) as c:
        reasons = [x for (x,) in c.execute("SELECT reason FROM runs WHERE status = 'failed'")]
    assert reasons
    reason = reasons[0]
    assert "\n" not in reason
    assert "counter 'cycles' is not supported here: no hardware PMU" in reason
    assert reason.startswith("phase:work: ")
    # stopped by the failure policy after the first runs, with the same line
    assert "counter 'cycles' is not supported" in r.out + r.err


def test_parse_perf_stat_cases():
    text = (
        "# started on Wed Nov 25 12:42:28 2026\n\n"
        "25663,,page-faults,202748999,100.00,126.575,K/sec\n"
        "202.75,msec,task-clock,202748999,100.00,0.486,CPUs utilized\n"
        "1000,,instructions,5000,50.00,,\n"
        "2000,,cycles,5000,50.00,,\n"
        "7,,cpu/event=0x3c,umask=0/u,5000,100.00,,\n"
    )
    events = ["page-faults", "task-clock", "instructions", "cycles", "cpu/event=0x3c,umask=0/u"]
    got = parse_perf_stat(text, events)
    assert got.values["page-faults"] == 25663
    assert got.values["task-clock"] == 202.75 and got.units["task-clock"] == "msec"
    assert got.values["ipc"] == 0.5
    assert got.counted_pct["cycles"] == 50.0  # multiplexed: perf scaled it
    assert got.values["cpu/event=0x3c,umask=0/u"] == 7
    with pytest.raises(CounterError, match="'cycles' is not supported here: why"):
        parse_perf_stat("<not supported>,,cycles,0,100.00,,\n", ["cycles"], lambda e: ": why")
    with pytest.raises(CounterError, match="'cycles' was not counted"):
        parse_perf_stat("<not counted>,,cycles,0,0.00,,\n", ["cycles"])
    with pytest.raises(CounterError, match="printed no count"):
        parse_perf_stat("", ["page-faults"])


@pytest.mark.parametrize(
    ("phase_extra", "metric", "line", "message"),
    [
        ('counters = ["page-faults"]', 'counter = "page-fault"', 14, "did you mean 'page-faults'"),
        ('counters = ["page faults"]', 'counter = "page-faults"', 10, "not a perf event name"),
        ('counters = ["instructions"]', 'counter = "ipc"', 14, "needs instructions and cycles"),
        ("", 'counter = "page-faults"', 14, 'add counters = ["page-faults"]'),
        ('counters = ["ipc"]', 'counter = "ipc"', 10, "computed from instructions and cycles"),
    ],
)
def test_counter_names_checked_at_load(tmp_path, phase_extra, metric, line, message):
    text = (  # the phase's extra key on line 10, the metric's source on line 14
        'name = "x"\nbaseline = "a"\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
        f'[[phase]]\nname = "p"\ncommand = "true"\n{phase_extra}\n'
        f'[[metric]]\nname = "m"\nbetter = "lower"\n{metric}\n'
    )
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--store", str(tmp_path / "db.sqlite"), "--dry-run")
    assert r.code == 2
    assert f"spec.toml:{line}:" in r.err and message in r.err
    assert len(r.err.strip().splitlines()) <= 2


def test_counters_on_a_kv_phase_refused(tmp_path):
    text = (
        'name = "x"\nbaseline = "a"\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
        '[[phase]]\nname = "p"\ncounters = ["page-faults"]\n'
        'kv = { server = "127.0.0.1:1", test_time = "1s" }\n'
        '[[metric]]\nname = "ops_per_sec"\nbetter = "higher"\n'
    )
    r = perflab("run", str(write_spec(tmp_path, text)), "--dry-run")
    assert r.code == 2 and "spec.toml:9:" in r.err and "kv phase" in r.err
