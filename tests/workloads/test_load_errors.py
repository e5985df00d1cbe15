"""Failed requests never pass quietly: the load generator counts them by kind (server error
replies, lost connections, timeouts), shows the counts in its table and JSON, and exits 1;
a kv phase whose requests failed fails its run with a one-line reason. Real memcached and
redis-server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import sqlite3

from cli_helpers import perflab, write_spec
from perflab.workloads.kv import KvConfig, KvResult, run_kv
from servers import start_redis
from test_load_faults import FakeRedis

TOO_LARGE = "SERVER_ERROR object too large for cache"


def load(*argv: str):
    return perflab("load", "-q", *argv)


def json_doc(out: str) -> dict:
    return json.loads(out)  # stdout is nothing but the document


def test_oversize_values_text_protocol_exit_1_with_counts_by_kind(memcached):
    # 2 MB values: over memcached's 1 MB item limit, every SET is answered SERVER_ERROR
    argv = (
        "-s",
        memcached.address,
        "-P",
        "memcache_text",
        "-t",
        "1",
        "-c",
        "2",
        "-n",
        "150",
        "--ratio",
        "1:2",
        "-d",
        "2000000",
        "--key-maximum",
        "1000",
    )
    r = load(*argv)
    assert r.code == 1, r.err
    assert (
        "errors: 100 SERVER_ERROR object too large for cache   connection failures: 0" in r.out
    ), r.out
    last = r.err.strip().splitlines()[-1]
    assert (
        last
        == "perflab: error: 100 of 300 requests failed: SERVER_ERROR object too large for cache (100)"
    ), r.err
    assert "warning: 100 of 300" not in r.err  # said once, by the error line

    r = load(*argv, "--json")
    assert r.code == 1, r.err
    doc = json_doc(r.out)
    assert doc["status"] == "complete"  # error replies are no fault: the run went on…
    e = doc["errors"]
    assert e["by_kind"] == {TOO_LARGE: 100} and e["total"] == e["measured"] == 100
    assert e["warmup"] == 0 and e["attempted"] == 300 and e["examples"] == {}
    # …and its GETs all missed (nothing was stored): misses are not errors
    assert doc["gets"]["misses"] == 200 and doc["gets"]["error_replies"] == 0
    assert doc["metrics"]["errors"] == 100 and doc["sets"]["error_replies"] == 100
    assert "100 of 300 requests failed" in r.err


def test_oversize_values_binary_protocol_by_status_name(memcached):
    r = load(
        "-s",
        memcached.address,
        "-P",
        "memcache_binary",
        "-t",
        "2",
        "-c",
        "1",
        "-n",
        "60",
        "--ratio",
        "1:1",
        "-d",
        "2000000",
        "--key-maximum",
        "1000",
        "--json",
    )
    assert r.code == 1, r.err
    e = json_doc(r.out)["errors"]
    assert e["by_kind"] == {"value too large": 60}, e  # status 0x0003, by name; GET misses absent
    assert e["examples"] == {"value too large": "Too large."}
    assert e["attempted"] == 120
    assert (
        r.err.strip().splitlines()[-1]
        == 'perflab: error: 60 of 120 requests failed: value too large (60); e.g. "Too large."'
    )


def test_requests_that_succeed_exit_0_and_say_errors_0(memcached):
    r = load(
        "-s",
        memcached.address,
        "-P",
        "memcache_text",
        "-t",
        "1",
        "-c",
        "2",
        "-n",
        "600",
        "--ratio",
        "1:1",
        "-d",
        "100",
        "--key-maximum",
        "100",
    )
    assert r.code == 0, r.err
    assert "errors: 0   connection failures: 0" in r.out
    r = load(
        "-s",
        memcached.address,
        "-P",
        "memcache_binary",
        "-t",
        "1",
        "-c",
        "2",
        "-n",
        "600",
        "--ratio",
        "0:1",
        "--key-minimum",
        "5000",
        "--key-maximum",
        "6000",
        "--json",
    )
    assert r.code == 0, r.err  # every GET a miss: still no failed request
    doc = json_doc(r.out)
    assert doc["gets"]["misses"] == 1200
    assert doc["errors"] == {
        "total": 0,
        "measured": 0,
        "warmup": 0,
        "attempted": 1200,
        "by_kind": {},
        "warmup_by_kind": {},
        "examples": {},
    }


def test_redis_out_of_memory_replies_are_counted_as_oom():
    with start_redis(extra=("--maxmemory", "1mb", "--maxmemory-policy", "noeviction")) as redis:
        r = load(
            "-s",
            redis.address,
            "-P",
            "redis",
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "2000",
            "--ratio",
            "1:0",
            "-d",
            "1000",
            "--json",
        )
    assert r.code == 1, r.err
    doc = json_doc(r.out)
    e = doc["errors"]
    assert set(e["by_kind"]) == {"OOM"}, e
    assert e["by_kind"]["OOM"] == e["total"] == doc["sets"]["error_replies"] > 0
    assert e["examples"]["OOM"].startswith("OOM command not allowed")
    assert (
        e["total"] + doc["sets"]["requests"] == e["attempted"] == 4000
    )  # each SET stored or refused
    assert (
        f'{e["total"]:,} of 4,000 requests failed: OOM ({e["total"]:,}); e.g. "OOM command not allowed'
        in r.err
    )


def test_redis_wrongtype_replies_by_first_word(redis_server):
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=5) as s:
        s.sendall(b"*3\r\n$5\r\nRPUSH\r\n$9\r\nmemtier-7\r\n$1\r\nx\r\n")
        assert s.recv(64) == b":1\r\n"
    cfg = KvConfig(
        server=redis_server.address,
        protocol="redis",
        threads=1,
        clients=2,
        requests=40,
        ratio="0:1",
        key_min=7,
        key_max=7,
    )  # every GET reads the list
    result = run_kv(cfg)
    assert result.status == "complete" and not result.ok
    e = result.errors
    assert e.by_kind == {"WRONGTYPE": 80} and e.total == e.attempted == 80
    assert (
        e.examples["WRONGTYPE"]
        == "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    assert result.error == (
        "80 of 80 requests failed: WRONGTYPE (80); "
        'e.g. "WRONGTYPE Operation against a key holding the wrong kind of value"'
    )
    assert "errors: 80 WRONGTYPE" in result.format_summary()


def test_lost_connections_and_timeouts_are_kinds_too(memcached):
    fake = FakeRedis(good=30, mode="close")  # closes each connection after 30 replies
    try:
        r = load(
            "-s",
            fake.address,
            "-P",
            "redis",
            "-t",
            "1",
            "-c",
            "2",
            "--pipeline",
            "1",
            "-n",
            "500",
            "--key-maximum",
            "100",
            "--json",
        )
    finally:
        fake.close()
    assert r.code == 1
    doc = json_doc(r.out)
    assert doc["status"] == "failed" and "closed the connection" in doc["error"]
    e = doc["errors"]
    assert set(e["by_kind"]) == {"connection closed"}, e
    assert e["total"] == doc["sets"]["lost"] + doc["gets"]["lost"] >= 1

    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_binary",
        test_time="30s",
        threads=1,
        clients=2,
        pipeline=2,
        key_max=1_000,
        response_timeout="1s",
    )

    def pause_once_answering(p):  # the server stops answering mid-run
        if p.phase == "measuring" and p.requests_done > 0 and memcached.alive() and not paused:
            paused.append(True)
            memcached.pause()

    paused: list[bool] = []
    try:
        result = run_kv(cfg, progress=pause_once_answering, progress_interval=0.0)
    finally:
        memcached.resume()
    assert paused
    assert result.status == "failed" and "stopped answering" in result.error
    assert set(result.errors.by_kind) == {"response timeout"}
    assert result.errors.total == result.metrics()["errors"] >= 1


KV_SPEC = """\
name = "kv-errors"
baseline = "small"
repetitions = 1

[[variant]]
name = "small"
params = {{ size = 2000000 }}
[[variant]]
name = "smaller"
params = {{ size = 1500000 }}

[[phase]]
name = "fill"
[phase.kv]
server = "{server}"
protocol = "memcache_text"
requests = 50
ratio = "1:0"
clients = 2
threads = 1
key_min = 1
key_max = 1000
data_size = "{{size}}"

[[metric]]
name = "ops_per_sec"
better = "higher"
"""


def test_kv_phase_with_error_replies_fails_the_run_with_the_count_and_kind(tmp_path, memcached):
    spec = write_spec(tmp_path, KV_SPEC.format(server=memcached.address))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code != 2, r.err
    con = sqlite3.connect(db)
    rows = con.execute("SELECT variant, status, reason FROM runs ORDER BY order_index").fetchall()
    metrics = con.execute("SELECT count(*) FROM metrics").fetchone()[0]
    con.close()
    reason = (
        "phase:fill: kv: 100 of 100 requests failed: SERVER_ERROR object too large for cache (100)"
    )
    assert sorted(rows) == [("small", "failed", reason), ("smaller", "failed", reason)], rows
    assert metrics == 0  # no throughput numbers from a load whose every request failed
    assert reason in " ".join(r.err.split())  # the progress output says why (wrapped at 80)
    shown = perflab("show", "last", "--store", str(db), "--run", "1")
    assert shown.code == 0, shown.err
    assert f"reason: {reason}" in " ".join(shown.out.split())
    assert (
        "errors: 100 SERVER_ERROR object too large for cache" in shown.out
    )  # the stored table's summary


def test_results_stored_before_kinds_were_counted_still_report_their_failures(memcached):
    r = run_kv(
        KvConfig(
            server=memcached.address,
            protocol="memcache_text",
            threads=1,
            clients=1,
            requests=30,
            ratio="1:0",
            data_size="2000000",
        )
    )
    doc = r.to_json()
    del doc["errors"]  # as written by an older perflab
    old = KvResult(doc)
    assert not old.ok
    assert old.errors.total == 30 and old.errors.by_kind == {"error reply": 30}
    assert old.errors.examples == {"error reply": f"SET {TOO_LARGE}"}
    assert old.error == f'30 of 30 requests failed: error reply (30); e.g. "SET {TOO_LARGE}"'
