"""kv phases through the runner against a real memcached started by the spec itself:
populate (allkeys, P:P, unmeasured) then a measured Gaussian read, as the
MGLRU memcached experiment does."""

from __future__ import annotations

import json
import socket
import sqlite3

from cli_helpers import perflab, write_spec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SPEC = """\
name = "kv-e2e"
baseline = "one-thread"
repetitions = 2
timeout = "60s"
# stop this run's server and wait until it is gone, so the next one can bind the port
after_each = "pid=$(cat {{run_dir}}/mc.pid) && kill $pid && while [ -e /proc/$pid ] && [ \\"$(cut -d\\" \\" -f3 /proc/$pid/stat 2>/dev/null)\\" != Z ]; do sleep 0.02; done; true"

[params]
port = {port}
wait_ready = "for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; sleep 0.02; done; exit 1"

[matrix]
keys = {{ "small" = 2000, "large" = 5000 }}

[[variant]]
name = "one-thread"
setup = "memcached -l 127.0.0.1 -p {{port}} -t 1 -m 64 -d -P {{run_dir}}/mc.pid -U 0 -u $(id -un) && bash -c {{wait_ready}}"
[[variant]]
name = "two-threads"
setup = "memcached -l 127.0.0.1 -p {{port}} -t 2 -m 64 -d -P {{run_dir}}/mc.pid -U 0 -u $(id -un) && bash -c {{wait_ready}}"

[[phase]]
name = "populate"
measure = false
[phase.kv]
server = "127.0.0.1:{{port}}"
protocol = "memcache_binary"
requests = "allkeys"
ratio = "1:0"
pipeline = 8
clients = 1
threads = 1
key_min = 1
key_max = "{{keys}}"
key_pattern = "P:P"
data_size = 100

[[phase]]
name = "access"
kv = {{ server = "127.0.0.1:{{port}}", protocol = "memcache_binary", test_time = "0.5s", ratio = "0:1", pipeline = 8, clients = 2, threads = 1, key_min = 1, key_max = "{{keys}}", key_pattern = "G:G", randomize = true, distinct_client_seed = true }}

[[metric]]
name = "ops_per_sec"
unit = "ops/s"
better = "higher"
[[metric]]
name = "p99_latency_ms"
unit = "ms"
better = "lower"
[[metric]]
name = "misses"
field = "misses_per_sec"
better = "lower"
"""


def test_kv_phases_populate_then_measure(tmp_path):
    spec = write_spec(tmp_path, SPEC.format(port=free_port()))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db))
    assert r.code == 0, r.err
    assert "TLDR — two-threads vs one-thread" in r.out
    con = sqlite3.connect(db)
    assert con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall() == [
        ("ok", 8)
    ], con.execute("SELECT reason FROM runs").fetchall()
    ops = [v for (v,) in con.execute("SELECT value FROM metrics WHERE name='ops_per_sec'")]
    assert len(ops) == 8 and min(ops) > 100
    # every key was written by the populate phase: the Gaussian reads never miss
    assert {v for (v,) in con.execute("SELECT value FROM metrics WHERE name='misses'")} == {0.0}
    doc = json.loads(
        __import__("zlib").decompress(
            con.execute("SELECT data FROM artifacts WHERE name='kv:access' LIMIT 1").fetchone()[0]
        )
    )
    assert doc["status"] == "complete"
    populate = json.loads(
        __import__("zlib").decompress(
            con.execute(
                "SELECT a.data FROM artifacts a JOIN runs r ON r.id=a.run_id WHERE a.name='kv:populate' "
                "AND r.cell_key='keys=large' LIMIT 1"
            ).fetchone()[0]
        )
    )
    assert "histograms" in json.dumps(populate) or "hist" in json.dumps(populate)
    con.close()


def test_kv_phase_bad_option_is_spec_error(tmp_path):
    text = SPEC.format(port=free_port()).replace('key_pattern = "G:G"', 'key_pattern = "Q:G"')
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--dry-run")
    assert r.code == 2
    line = r.err.strip().replace(str(spec), "SPEC")
    assert line.startswith("perflab: error: SPEC:40: kv key_pattern:"), line


def test_kv_phase_unreachable_server_fails_the_run_not_the_experiment(tmp_path):
    text = SPEC.format(port=free_port()).replace("repetitions = 2", "repetitions = 1")
    text = "\n".join(
        'setup = "true"' if l.startswith('setup = "memcached') else l for l in text.splitlines()
    )  # the server is never started
    spec = write_spec(tmp_path, text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--max-failures", "0")
    assert r.code == 1, r.err  # every run failed: recorded, and the exit code says so
    con = sqlite3.connect(db)
    rows = con.execute("SELECT status, reason FROM runs").fetchall()
    assert {s for s, _ in rows} == {"failed"}
    assert all(reason.startswith("phase:populate: ") for _, reason in rows), rows
    con.close()
