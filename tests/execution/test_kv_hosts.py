"""A kv phase whose load comes from two client hosts (two real sshd on loopback, each a
"machine" with perflab-load staged to it) against one real memcached: the processes start
at one instant, their results are merged exactly (requests summed, histograms pooled), the
run records each process's result, the hosts' clock offsets and where each ran; the server
saw every request the merge counts."""

from __future__ import annotations

import json

import pytest
from cli_helpers import perflab, write_spec
from perflab.store import Database
from perflab.workloads.kv_result import KvResult, merge_histograms
from servers import start_memcached
from sshd import start_sshd

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def clients():
    with start_sshd() as c1, start_sshd() as c2:
        yield c1, c2


@pytest.fixture()
def memcached():
    with start_memcached() as srv:
        yield srv


def spec_text(c1, c2, port: int, *, on: str, processes: int = 1, reps: int = 1) -> str:
    return f"""\
name = "kv-from-clients"
baseline = "a"
repetitions = {reps}
timeout = "60s"

[hosts.c1]
{c1.host_table()}
[hosts.c2]
{c2.host_table()}

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "load"
on = {on}
processes = {processes}
kv = {{ server = "127.0.0.1:{port}", protocol = "memcache_text", test_time = "0.5s", ratio = "1:1", pipeline = 4, clients = 2, threads = 1, key_max = 500, distinct_client_seed = true }}

[[metric]]
name = "ops_per_sec"
better = "higher"
[[metric]]
name = "p99_latency_ms"
better = "lower"
"""


def _server_requests(srv) -> int:
    stats = srv.stats()
    return int(stats["cmd_get"]) + int(stats["cmd_set"])


def test_load_from_two_hosts_is_merged_exactly(clients, memcached, tmp_path):
    c1, c2 = clients
    spec = write_spec(tmp_path, spec_text(c1, c2, memcached.port, on='["c1", "c2"]'))
    db = tmp_path / "p.db"
    before = _server_requests(memcached)
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        runs = s.runs(1)
        assert [x.status for x in runs] == ["ok", "ok"]
        total = 0
        for run in runs:
            merged = KvResult(json.loads(s.artifact(1, "kv:load", run.id)))
            parts = [
                KvResult(json.loads(s.artifact(1, f"kv:load@{name}", run.id)))
                for name in ("c1#1", "c2#1")
            ]
            m, pm = merged.metrics(), [p.metrics() for p in parts]
            assert m["requests"] == sum(p["requests"] for p in pm) > 0
            assert m["connections"] == 4  # 2 connections from each host
            # throughput: the sum of each process's own rate
            assert m["ops_per_sec"] == pytest.approx(sum(p["ops_per_sec"] for p in pm))
            # latency: percentiles of the pooled histograms, not averaged ones
            pooled = merge_histograms(parts)
            assert merged.latency().count == pooled.count == m["requests"]
            assert m["p99_latency_ms"] == pytest.approx(pooled.percentile_ms(99), rel=1e-9)
            # the stored metric is the merged one
            stored = {name: v for rid, name, v in s.metrics(1) if rid == run.id}
            assert stored["ops_per_sec"] == pytest.approx(m["ops_per_sec"])
            # one common start: no process started before it (one clock here, so the
            # offsets are known to lie within their uncertainty)
            clocks = dict(
                line.split("\t", 1)
                for line in s.artifact(1, "clocks:load", run.id).decode().splitlines()
            )
            start = float(clocks.pop("start"))
            assert set(clocks) == {"c1", "c2"}
            for text in clocks.values():  # "+0.012 ms\t± 1.234 ms"
                offset, uncertainty = text.split("\t")
                assert abs(float(offset.split()[0])) <= float(uncertainty.split()[1]) + 1e-3
            for p in parts:
                assert p.to_json()["started_unix_s"] >= start
            placed = s.artifact(1, "hosts", run.id).decode()
            assert "phase:load@c1" in placed and "phase:load@c2" in placed
            table = s.artifact(1, "stdout:phase:load", run.id).decode()
            assert "c1#1" in table and "c2#1" in table
            total += int(m["requests"]) + merged.to_json()["warmup_requests"]
    # the server answered at least every request the merges counted (warmup included)
    assert _server_requests(memcached) - before >= total
    # the report shows each process's share, and no process as a phase of its own
    out = tmp_path / "report.md"
    rep = perflab("report", "1", "--store", str(db), "-o", str(out))
    assert rep.code == 0, rep.err
    text = out.read_text()
    section = text.split("Load processes", 1)[1]
    for process in ("c1#1", "c2#1"):
        assert process in section
    assert "load@c1" not in text and "load@c2" not in text


def test_several_processes_per_host(clients, memcached, tmp_path):
    c1, c2 = clients
    spec = write_spec(tmp_path, spec_text(c1, c2, memcached.port, on='"c1"', processes=2))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        run = s.runs(1)[0]
        names = {n for n, _ in s.artifact_names(1, run.id) if n.startswith("kv:load@")}
        assert names == {"kv:load@c1#1", "kv:load@c1#2"}
        seeds = {KvResult(json.loads(s.artifact(1, n, run.id))).seed for n in names}
        assert len(seeds) == 2  # distinct_client_seed: each process draws its own keys
        merged = KvResult(json.loads(s.artifact(1, "kv:load", run.id)))
        assert merged.metrics()["connections"] == 4


def test_a_load_process_that_fails_fails_its_run_with_one_line(clients, tmp_path):
    c1, c2 = clients
    from servers import free_port

    port = free_port()  # nothing listens there
    spec = write_spec(tmp_path, spec_text(c1, c2, port, on='["c1", "c2"]'))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare", "--max-failures", "0")
    assert r.code == 1
    with Database(db) as s:
        runs = s.runs(1)
        assert [x.status for x in runs] == ["failed", "failed"]
        assert all("phase:load" in (x.reason or "") for x in runs)
        assert all("\n" not in (x.reason or "") for x in runs)
