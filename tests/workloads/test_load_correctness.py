"""The load generator against real servers: key coverage, key distributions, read-back
of exactly what was written, ratios and counts, open-loop latency under a paused server."""

from __future__ import annotations

import re
import socket
import threading
import time

import numpy as np
import pytest
from perflab.workloads.kv import KvConfig, run_kv
from scipy import stats as sps
from servers import memcache_get_many, redis_get_many, start_memcached


def expected_value(key: str, size: int) -> bytes:
    """perflab's value format: the first `size` bytes of key + ":" + "xxxx…"."""
    return (key.encode() + b":" + b"x" * size)[:size]


def test_allkeys_parallel_writes_every_key_exactly_once(memcached):
    # 6 clients over 20,000 keys: slices of 3333/3334 keys, as the MGLRU memcached experiment's
    # populate step
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_binary",
        requests="allkeys",
        ratio="1:0",
        key_pattern="P:P",
        key_min=1,
        key_max=20_000,
        threads=2,
        clients=3,
        pipeline=8,
        data_size=100,
    )
    r = run_kv(cfg)
    assert r.status == "complete", r.error
    m = r.metrics()
    assert m["requests"] == 20_000 and m["errors"] == 0
    stats = memcached.stats()
    assert int(stats["curr_items"]) == 20_000
    assert int(stats["total_items"]) == 20_000  # 20,000 stores in all: no key written twice
    keys = [f"memtier-{k}" for k in range(1, 20_001)]
    got = memcache_get_many(memcached.port, keys)
    assert len(got) == 20_000
    assert all(got[k] == expected_value(k, 100) for k in keys)
    assert "memtier-0" not in memcache_get_many(memcached.port, ["memtier-0", "memtier-20001"])


def test_gaussian_read_after_populate_hits_everything(memcached):
    common = {
        "server": memcached.address,
        "protocol": "memcache_binary",
        "key_min": 1,
        "key_max": 5_000,
        "threads": 2,
        "clients": 2,
        "pipeline": 8,
    }
    populate = run_kv(
        KvConfig(**common, requests="allkeys", ratio="1:0", key_pattern="P:P", data_size=64)
    )
    assert populate.ok
    read = run_kv(
        KvConfig(
            **common,
            requests=2_500,
            ratio="0:1",
            key_pattern="G:G",
            randomize=True,
            distinct_client_seed=True,
            verify=True,
        )
    )
    m = read.metrics()
    assert read.ok and m["requests"] == 10_000
    assert m["hit_ratio"] == 1.0 and m["misses_per_sec"] == 0
    assert m["verify_failures"] == 0


def _monitored_keys(redis, cfg: KvConfig) -> list[int]:
    """Run `cfg` while redis MONITOR records every command; return the GET key indices."""
    mon = socket.create_connection(("127.0.0.1", redis.port))
    mon.sendall(b"MONITOR\r\n")
    assert mon.recv(5) == b"+OK\r\n"
    lines: list[bytes] = []
    done = threading.Event()

    def read():
        buf = b""
        mon.settimeout(0.5)
        while True:
            try:
                chunk = mon.recv(1 << 16)
            except TimeoutError:
                if done.is_set():
                    break
                continue
            if not chunk:
                break
            buf += chunk
        lines.extend(buf.split(b"\r\n"))

    t = threading.Thread(target=read)
    t.start()
    r = run_kv(cfg)
    done.set()
    t.join(10)
    mon.close()
    assert r.ok, r.error
    keys = [int(m.group(1)) for line in lines if (m := re.search(rb'"GET" "memtier-(\d+)"', line))]
    assert len(keys) == r.metrics()["requests"]
    return keys


def test_gaussian_keys_have_the_configured_mean_and_stddev(redis_server):
    base = {
        "server": redis_server.address,
        "protocol": "redis",
        "ratio": "0:1",
        "key_pattern": "G:G",
        "key_min": 1,
        "key_max": 20_000,
        "threads": 1,
        "clients": 4,
        "pipeline": 16,
        "requests": 5_000,
        "distinct_client_seed": True,
    }
    # defaults: median = centre, stddev = range/6, draws outside the range redrawn (truncation at ±3σ)
    keys = np.array(_monitored_keys(redis_server, KvConfig(**base)), dtype=float)
    mu, sigma = (1 + 20_000) / 2, (20_000 - 1) / 6
    truncated = sps.truncnorm(-3, 3, loc=mu, scale=sigma)
    se = truncated.std() / np.sqrt(len(keys))
    assert abs(keys.mean() - mu) < 4 * se
    assert abs(keys.std(ddof=1) / truncated.std() - 1) < 0.03
    assert keys.min() >= 1 and keys.max() <= 20_000
    # the whole shape, not just two moments (integer keys: compare with a coarse binning)
    assert sps.kstest(keys, truncated.cdf).statistic < 0.01
    # explicit median and stddev
    keys = np.array(
        _monitored_keys(redis_server, KvConfig(**base, key_median=6_000, key_stddev=800)),
        dtype=float,
    )
    assert abs(keys.mean() - 6_000) < 4 * 800 / np.sqrt(len(keys))
    assert abs(keys.std(ddof=1) / 800 - 1) < 0.03


@pytest.mark.parametrize("protocol", ["memcache_text", "memcache_binary", "redis"])
def test_protocols_read_back_exactly_what_was_written(protocol):
    from servers import start_redis

    server = start_redis() if protocol == "redis" else start_memcached()
    with server:
        # sizes grow with the key index (pattern S) so a value of the wrong key or length shows
        cfg = KvConfig(
            server=server.address,
            protocol=protocol,
            requests="allkeys",
            ratio="1:0",
            key_pattern="P:P",
            key_prefix="rb:",
            key_min=1,
            key_max=3_000,
            threads=2,
            clients=2,
            pipeline=4,
            data_size="10-700",
            data_size_pattern="S",
        )
        r = run_kv(cfg)
        assert r.ok and r.metrics()["requests"] == 3_000, r.error
        keys = [f"rb:{k}" for k in range(1, 3_001)]
        got = (redis_get_many if protocol == "redis" else memcache_get_many)(server.port, keys)
        assert len(got) == 3_000
        for k in range(1, 3_001):
            size = round(10 + (700 - 10) * (k - 1) / (3_000 - 1))
            assert got[f"rb:{k}"] == expected_value(f"rb:{k}", size), k
        # perflab's own check on the way back agrees
        back = run_kv(
            cfg.model_copy(
                update={"requests": 1_000, "ratio": "0:1", "key_pattern": "R:R", "verify": True}
            )
        )
        m = back.metrics()
        assert m["hit_ratio"] == 1.0 and m["verify_failures"] == 0 and m["requests"] == 4_000


def test_counts_ratio_and_several_servers():
    with start_memcached() as a, start_memcached() as b:
        cfg = KvConfig(
            server=[a.address, b.address],
            protocol="memcache_text",
            requests=400,
            ratio="1:3",
            key_pattern="S:S",
            key_min=1,
            key_max=1_000,
            threads=2,
            clients=3,
            pipeline=2,
        )
        r = run_kv(cfg)
        assert r.ok, r.error
        doc = r.to_json()
        assert doc["sets"]["requests"] == 2 * 3 * 400 // 4  # the cycle sends 1 SET, then 3 GETs
        assert doc["gets"]["requests"] == 2 * 3 * 400 * 3 // 4
        per_server = {s["server"]: s for s in doc["servers"]}
        assert (
            per_server[a.address]["connections"] == 3 and per_server[b.address]["connections"] == 3
        )
        assert per_server[a.address]["requests"] + per_server[b.address]["requests"] == 2_400
        # sequential keys from key_min: each server saw SETs of memtier-1 … memtier-300
        for s in (a, b):
            assert int(s.stats()["cmd_set"]) == 300
            assert int(s.stats()["curr_items"]) == 100


def test_warmup_is_excluded_and_time_limits_hold(memcached):
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        test_time="0.8s",
        warmup="0.4s",
        threads=1,
        clients=2,
        key_max=1_000,
    )
    r = run_kv(cfg)
    doc, m = r.to_json(), r.metrics()
    assert r.ok and doc["warmup_requests"] > 0
    # the measured window is the test time (plus the last replies), not warmup + test time
    assert 0.8 <= m["duration_s"] < 0.8 + 0.3
    total_measured = doc["sets"]["requests"] + doc["gets"]["requests"]
    assert total_measured == m["requests"]
    served = int(memcached.stats()["cmd_get"]) + int(memcached.stats()["cmd_set"])
    assert served >= total_measured + doc["warmup_requests"]


def test_open_loop_latency_counts_a_paused_server(memcached):
    """A server paused for 0.5 s: latency from the intended send time shows it; latency
    from the actual send hides it (coordinated omission), and the requests that waited
    are counted late."""
    pause_s = 0.5
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        rate=2_000,
        test_time="2.5s",
        threads=1,
        clients=2,
        key_max=1_000,
        response_timeout="5s",
    )

    def pause_then_resume():
        time.sleep(1.0)
        memcached.pause()
        time.sleep(pause_s)
        memcached.resume()

    t = threading.Thread(target=pause_then_resume)
    t.start()
    r = run_kv(cfg)
    t.join()
    m = r.metrics()
    assert r.ok, r.error
    # ~1,000 of ~5,000 requests were due during the pause: waits spread over 0–500 ms
    assert m["p99_latency_ms"] > 0.6 * pause_s * 1e3
    assert m["max_latency_ms"] > 0.9 * pause_s * 1e3
    assert m["p99_uncorrected_latency_ms"] < m["p99_latency_ms"] / 5
    assert m["late_requests"] > 0.1 * m["requests"]
    # the merged histogram of the run says the same as its metrics
    lat = r.latency()
    assert lat.percentile_ms(99) == pytest.approx(m["p99_latency_ms"], rel=1e-9)
    unc = r.latency(uncorrected=True)
    assert unc.percentile_ms(99) == pytest.approx(m["p99_uncorrected_latency_ms"], rel=1e-9)


def test_open_loop_rate_is_met_with_constant_and_poisson_arrivals(memcached):
    for arrivals in ("constant", "poisson"):
        cfg = KvConfig(
            server=memcached.address,
            protocol="memcache_text",
            rate=3_000,
            test_time="1s",
            threads=2,
            clients=4,
            key_max=1_000,
            arrivals=arrivals,
        )
        r = run_kv(cfg)
        m = r.metrics()
        assert r.ok
        # about rate × time requests: Poisson counts vary by ~sqrt(3000) ≈ 55
        assert abs(m["requests"] - 3_000) < 300, (arrivals, m["requests"])
        assert m["unsent_requests"] == 0
