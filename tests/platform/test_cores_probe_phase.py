"""Phases pinned to picked cores (`cores = N`) and platform probes as phases (as in
the router performance-index experiment)."""

from __future__ import annotations

import json
import os
import sqlite3

from cli_helpers import perflab, write_spec
from perflab.platform import pick_cores, read_topology

SPEC = """\
name = "pinned"
baseline = "a"
repetitions = 2

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "affinity"
cores = 1
command = "echo picked={cores_list}; grep Cpus_allowed_list /proc/self/status; echo env=$PERFLAB_CORES"

[[phase]]
name = "memmove"
cores = 1
probe = { name = "memmove", case = "small_no_miss", duration = 0.02 }

[[phase]]
name = "unpinned"
command = "grep Cpus_allowed_list /proc/self/status"

[[metric]]
name = "pinned_cpu"
phase = "affinity"
regex = 'Cpus_allowed_list:\\s*(?P<value>\\d+)$'
better = "lower"
[[metric]]
name = "memmove_small_no_miss_mib_per_sec"
phase = "memmove"
unit = "MiB/s"
better = "higher"
[[metric]]
name = "wall_time"
phase = "unpinned"
better = "lower"
"""


def test_cores_pin_command_phases_and_probes_run_as_phases(tmp_path):
    expected = pick_cores(1, read_topology()).cpus[0]
    db = tmp_path / "p.db"
    r = perflab("run", str(write_spec(tmp_path, SPEC)), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    con = sqlite3.connect(db)
    assert con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall() == [
        ("ok", 4)
    ], con.execute("SELECT reason FROM runs").fetchall()
    assert {v for (v,) in con.execute("SELECT value FROM metrics WHERE name='pinned_cpu'")} == {
        float(expected)
    }
    rates = [
        v
        for (v,) in con.execute(
            "SELECT value FROM metrics WHERE name='memmove_small_no_miss_mib_per_sec'"
        )
    ]
    assert len(rates) == 4 and min(rates) > 10  # MiB/s: far above anything a broken copy would give
    out = (
        __import__("zlib")
        .decompress(
            con.execute(
                "SELECT data FROM artifacts WHERE name='stdout:phase:affinity' LIMIT 1"
            ).fetchone()[0]
        )
        .decode()
    )
    assert f"picked={expected}" in out and f"env={expected}" in out
    # the unpinned phase keeps the runner's own affinity
    unpinned = (
        __import__("zlib")
        .decompress(
            con.execute(
                "SELECT data FROM artifacts WHERE name='stdout:phase:unpinned' LIMIT 1"
            ).fetchone()[0]
        )
        .decode()
    )
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) > 1:
        assert unpinned.split(":")[1].strip() != str(expected)
    info = json.loads(con.execute("SELECT info FROM environment").fetchone()[0])
    assert info["picked_cores"]["1"]["cpus"] == [expected]
    con.close()


def test_probe_and_cores_spec_errors(tmp_path):
    bad = SPEC.replace('probe = { name = "memmove"', 'probe = { name = "memmov"')
    r = perflab("run", str(write_spec(tmp_path, bad)), "--dry-run")
    assert r.code == 2 and ":18: probe phase 'memmove': name = 'memmov' is not a probe" in r.err
    too_many = SPEC.replace("cores = 1\ncommand", "cores = 4096\ncommand")
    r = perflab("run", str(write_spec(tmp_path, too_many)), "--store", str(tmp_path / "db"))
    assert r.code == 2 and r.err.strip().splitlines()[-1].startswith(
        "perflab: error: cores = 4096:"
    ), r.err
    assert "Traceback" not in r.err
