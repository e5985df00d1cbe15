"""Monitors: real /proc sampled while phases run — a phase that faults pages in shows
pgfault rising and a higher per-second rate than a quiet one; the shell-loop sampler used
on other hosts (run here through the same Host); summaries; names checked at load;
the report's panel."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time

import pytest
from cli_helpers import perflab, write_spec
from perflab.execution.phase_watch import RemoteSampler
from perflab.hosts.local import LocalHost
from perflab.observe import monitors
from perflab.observe.monitor_summary import summarize
from perflab.observe.monitors import LocalSampler, MonitorSeries
from perflab.spec.schema import MonitorSpec

TOUCH = """\
import mmap, sys
n = int(sys.argv[1]) << 20
m = mmap.mmap(-1, n)
if hasattr(mmap, "MADV_NOHUGEPAGE"):
    m.madvise(mmap.MADV_NOHUGEPAGE)
for i in range(0, n, mmap.PAGESIZE):
    m[i] = 1
"""
# The quiet phase waits on a pipe nobody writes to, for as long as select allows.
QUIET = "import select, os; r, w = os.pipe(); select.select([r], [], [], 0.4)\n"

SPEC = """\
name = "monitors"
baseline = "a"
repetitions = 2
monitor = {{ interval = "50ms", sources = ["vmstat", "meminfo", "psi", "cpu", "net"] }}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "quiet"
command = "{python} quiet.py"
[[phase]]
name = "fault"
command = "{python} touch.py 256"
[[metric]]
name = "quiet_faults"
phase = "quiet"
monitor = "vmstat.pgfault_per_s"
better = "lower"
[[metric]]
name = "fault_faults"
phase = "fault"
monitor = "vmstat.pgfault_per_s"
better = "lower"
[[metric]]
name = "cpu_util"
phase = "fault"
monitor = "cpu.util_pct"
better = "lower"
"""


def test_faulting_phase_shows_pgfault_rising(tmp_path):
    (tmp_path / "touch.py").write_text(TOUCH)
    (tmp_path / "quiet.py").write_text(QUIET)
    spec = write_spec(tmp_path, SPEC.format(python=shutil.which("python3")))
    db = tmp_path / "db.sqlite"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
        ).fetchall()
        blobs = c.execute("SELECT data FROM artifacts WHERE name = 'monitor:fault'").fetchall()
    values: dict[int, dict[str, float]] = {}
    for run, name, value in rows:
        values.setdefault(run, {})[name] = value
    assert len(values) == 4
    for v in values.values():  # each run: faulting in 256 MiB beats waiting on a pipe
        assert v["fault_faults"] > v["quiet_faults"]
        assert 0 <= v["cpu_util"] <= 100
    assert len(blobs) == 4
    import zlib

    for (blob,) in blobs:
        series = MonitorSeries.from_bytes(zlib.decompress(blob))
        counts = [n["pgfault"] for _, n in series.values("vmstat")]
        assert len(counts) >= 2
        assert counts == sorted(counts)  # a counter: never falls
        assert counts[-1] - counts[0] >= (256 << 20) // 4096  # every page touched faulted
    html = tmp_path / "report.html"
    assert perflab("report", "last", "--store", str(db), "-o", str(html)).code == 0
    text = html.read_text()
    assert "monitors of phase fault" in text and "Monitors during the phases" in text


def test_shell_loop_sampler_through_an_executor(tmp_path):
    """The sampler used on SSH hosts: a shell loop run as a step, stopped with the phase."""
    mon = MonitorSpec(interval=0.02, sources=["vmstat", "psi", "cpu", "net", "meminfo"])
    sampler = RemoteSampler(LocalHost(), mon, tmp_path, "p").start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the loop has printed three whole samples
        out = sampler.out.read_text() if sampler.out.exists() else ""
        if out.count("@end") >= 3:
            break
        time.sleep(0.01)
    series = sampler.stop()
    assert not sampler.thread.is_alive()
    assert len(series.samples) >= 3
    summary = summarize(series)
    assert "vmstat.pgfault_per_s" in summary and "cpu.util_pct" in summary
    assert "meminfo.MemTotal_kib" in summary and "net.lo.rx_bytes_per_s" in summary


def test_local_sampler_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(monitors, "MAX_SAMPLES", 8)
    sampler = LocalSampler(["vmstat"], 0.01).start()
    deadline = time.monotonic() + 30
    while sampler.series.interval < 0.04 and time.monotonic() < deadline:
        time.sleep(0.01)
    series = sampler.stop()
    assert series.interval >= 0.04  # thinned twice: every other sample dropped, interval doubled
    assert len(series.samples) <= 9
    ts = [float(s["t"]) for s in series.samples]  # type: ignore[arg-type]
    assert ts == sorted(ts)


def test_summaries_from_known_samples():
    s = MonitorSeries(1.0, ["vmstat", "meminfo", "psi", "cpu", "net"])
    s.samples = [
        {
            "t": 0.0,
            "vmstat": {"pgfault": 100.0, "nr_free_pages": 10.0},
            "meminfo": {"MemFree_kib": 1000.0},
            "psi": {"memory.some": 0.0},
            "cpu": {"cpu.user": 0.0, "cpu.idle": 0.0, "cpu.system": 0.0, "ctxt": 0.0},
            "net": {"eth0.rx_bytes": 0.0, "lo.rx_bytes": 0.0},
        },
        {
            "t": 2.0,
            "vmstat": {"pgfault": 300.0, "nr_free_pages": 30.0},
            "meminfo": {"MemFree_kib": 3000.0},
            "psi": {"memory.some": 500_000.0},
            "cpu": {"cpu.user": 30.0, "cpu.idle": 60.0, "cpu.system": 10.0, "ctxt": 50.0},
            "net": {"eth0.rx_bytes": 4000.0, "lo.rx_bytes": 100.0},
        },
    ]
    got = summarize(s)
    assert got["vmstat.pgfault_per_s"] == 100.0
    assert got["vmstat.nr_free_pages"] == 20.0  # a gauge: its mean
    assert got["meminfo.MemFree_kib"] == 2000.0
    assert got["psi.memory.some_pct"] == 25.0  # 0.5 s stalled in 2 s
    assert got["cpu.util_pct"] == 40.0 and got["cpu.user_pct"] == 30.0
    assert got["cpu.ctxt_per_s"] == 25.0
    assert got["net.eth0.rx_bytes_per_s"] == 2000.0
    assert got["net.all.rx_bytes_per_s"] == 2000.0  # lo left out
    round_trip = MonitorSeries.from_bytes(s.to_bytes())
    assert summarize(round_trip) == got


BASE = (
    'name = "x"\nbaseline = "a"\n{top}\n[[variant]]\nname = "a"\n[[variant]]\nname = "b"\n'
    '[[phase]]\nname = "p"\ncommand = "true"\n{phase}\n'
    '[[metric]]\nname = "m"\nbetter = "lower"\nmonitor = "{name}"\n'
)


@pytest.mark.parametrize(
    ("top", "phase", "name", "line", "message"),
    [
        ("", "", "vmstat.pgfault_per_s", 15, "needs a monitor on its phase"),
        ('monitor = { sources = ["psi"] }', "", "vmstat.pgfault_per_s", 15, "not enabled"),
        ("", 'monitor = { sources = ["vmstat"] }', "vmstat.pgfault_per_s", None, None),
        ("monitor = {}", "", "psi.memory.some_avg", 15, "e.g. psi.memory.some_pct"),
        ("monitor = {}", "", "vmsta.pgfault_per_s", 15, "is not a monitor summary"),
        ('monitor = { interval = "1ms" }', "", "cpu.util_pct", 3, "too short"),
        ('monitor = { on = "dutt" }', "", "cpu.util_pct", 3, "unknown host 'dutt'"),
    ],
)
def test_monitor_names_checked_at_load(tmp_path, top, phase, name, line, message):
    spec = write_spec(tmp_path, BASE.format(top=top, phase=phase, name=name))
    r = perflab("run", str(spec), "--store", str(tmp_path / "db.sqlite"), "--dry-run")
    if line is None:
        assert r.code == 0, r.err
        return
    assert r.code == 2
    assert f"spec.toml:{line}:" in r.err and message in r.err, r.err
    assert len(r.err.strip().splitlines()) <= 2


def test_series_json_lines_header():
    data = MonitorSeries(0.2, ["vmstat"], [{"t": 0.0, "vmstat": {"pgfault": 1.0}}]).to_bytes()
    head = json.loads(data.splitlines()[0])
    assert head["monitor"] == 1 and head["sources"] == ["vmstat"]
    with pytest.raises(ValueError):
        MonitorSeries.from_bytes(b'{"x": 1}\n')
