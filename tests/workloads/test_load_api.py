"""The Python API of the load generator: config normalisation, the result document,
documented metrics, and percentiles of histograms merged across runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from perflab import _native
from perflab.workloads.kv import (
    METRICS,
    KvConfig,
    KvResult,
    KvResultError,
    merge_histograms,
    run_kv,
)


def test_defaults_are_the_engines_and_memtiers():
    assert KvConfig().to_engine() == json.loads(_native.kv_default_config())
    c = KvConfig()
    assert (c.protocol, c.ratio, c.clients, c.threads, c.pipeline, c.key_pattern, c.key_prefix) == (
        "redis",
        "1:10",
        50,
        4,
        1,
        "R:R",
        "memtier-",
    )


def test_normalisation():
    c = KvConfig(
        server=["10.0.0.1", "h:7000", "::1", "[::1]:7001"],
        protocol="memcache_text",
        ratio=[1, 0],
        requests="allkeys",
        key_pattern="p",
        key_min=1,
        key_max=100,
        threads=1,
        clients=4,
        data_size=" 16 - 64 ",
        test_time=None,
        late_threshold="250ms",
        response_timeout="1m",
    )
    e = c.to_engine()
    assert e["servers"] == ["10.0.0.1:11211", "h:7000", "[::1]:11211", "[::1]:7001"]
    assert e["ratio"] == [1, 0] and e["requests"] == "all_keys" and e["key_pattern"] == ["P", "P"]
    assert (e["data_size_min"], e["data_size_max"]) == (16, 64)
    assert e["late_threshold"] == 0.25 and e["response_timeout"] == 60.0
    assert KvConfig(requests="200").to_engine()["requests"] == {"per_client": 200}
    assert KvConfig(port=7777).servers == ["127.0.0.1:7777"]


def _run(memcached, **kw) -> KvResult:
    cfg = {
        "server": memcached.address,
        "protocol": "memcache_text",
        "threads": 1,
        "clients": 3,
        "key_max": 500,
        "requests": 800,
        "ratio": "1:1",
    }
    cfg.update(kw)
    r = run_kv(KvConfig(**cfg))
    assert r.ok, r.error
    return r


def test_result_document_and_documented_metrics(memcached):
    r = _run(memcached)
    doc = r.to_json()
    for key in (
        "format",
        "version",
        "status",
        "error",
        "mode",
        "config",
        "started_unix_s",
        "warmup_s",
        "duration_s",
        "connections",
        "connection_failures",
        "sets",
        "gets",
        "late_requests",
        "unsent_requests",
        "unfinished_requests",
        "verify_failures",
        "warmup_requests",
        "client",
        "servers",
        "histograms",
        "metrics",
        "warnings",
    ):
        assert key in doc, key
    assert (
        doc["histograms"]["unit"] == "ns"
        and doc["histograms"]["encoding"] == "hdr-v2-deflate-base64"
    )
    assert doc["config"]["seed"] == 5381 and r.seed == 5381
    m = r.metrics()
    undocumented = set(m) - set(METRICS)
    assert not undocumented, undocumented
    assert m["requests"] == 2_400 and m["connections"] == 3
    assert m["ops_per_sec"] == pytest.approx(m["requests"] / m["duration_s"])
    assert m["sets_ops_per_sec"] + m["gets_ops_per_sec"] == pytest.approx(m["ops_per_sec"])
    assert m["hits_per_sec"] + m["misses_per_sec"] == pytest.approx(m["gets_ops_per_sec"])
    assert (
        m["p50_latency_ms"]
        <= m["p90_latency_ms"]
        <= m["p99_latency_ms"]
        <= m["p999_latency_ms"]
        <= m["max_latency_ms"]
    )
    assert m["client_cpu_us_per_request"] > 0
    assert r.to_json() is not r.to_json()  # a copy: callers cannot change the result
    with pytest.raises(KvResultError):
        KvResult({"format": "perflab-kv-result", "version": 99})
    with pytest.raises(KvResultError):
        KvResult({"what": "else"})


def test_open_loop_metrics_are_documented(memcached):
    r = _run(memcached, rate=2_000, requests=200)
    m = r.metrics()
    assert not set(m) - set(METRICS)
    for k in (
        "p99_uncorrected_latency_ms",
        "late_requests",
        "unsent_requests",
        "target_rate_per_sec",
    ):
        assert k in m
    assert r.open_loop and m["target_rate_per_sec"] == 2_000


def test_single_run_percentiles_read_back_exactly(memcached):
    r = _run(memcached, requests=3_000, pipeline=4)
    m = r.metrics()
    for which in ("sets", "gets", "totals"):
        lat = r.latency(which)
        prefix = "" if which == "totals" else f"{which}_"
        for name, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
            assert lat.percentile_ms(p) == pytest.approx(
                m[f"{prefix}{name}_latency_ms"], rel=1e-12
            ), (which, p)
        assert lat.max_ms == pytest.approx(m[f"{prefix}max_latency_ms"], rel=1e-12)


def test_merged_histograms_pool_all_requests(memcached):
    runs = [_run(memcached, requests=n, seed=s) for n, s in ((300, 1), (1_500, 2), (700, 3))]
    docs = [json.loads(json.dumps(r.to_json())) for r in runs]  # as stored
    merged = merge_histograms(docs)
    assert merged.count == sum(r.metrics()["requests"] for r in runs)
    # pooled percentiles lie within the runs' range, and weigh runs by their request counts
    p99s = [r.metrics()["p99_latency_ms"] for r in runs]
    assert min(p99s) <= merged.percentile_ms(99) <= max(p99s)
    # merging is exact: same as merging the per-command histograms in any order
    again = merge_histograms(reversed(docs), "gets").merge(merge_histograms(docs, "sets"))
    for p in (0, 10, 50, 90, 99, 99.9, 100):
        assert again.percentile_ms(p) == merged.percentile_ms(p)
    with pytest.raises(ValueError):
        merged.percentile_ms(101)
    with pytest.raises(KvResultError, match="uncorrected"):
        merge_histograms(docs, uncorrected=True)


def test_merge_equals_percentiles_of_pooled_samples():
    """Synthetic runs with known latencies: the merge's percentiles are the pooled sample's
    (nearest-rank, ⌈q·n⌉) to within the histograms' 0.1% resolution."""
    from hdrh.histogram import HdrHistogram

    rng = np.random.default_rng(7)
    samples = [
        rng.lognormal(np.log(2e5), s, size=n).astype(np.int64) + 1
        for s, n in ((0.3, 2_000), (1.0, 5_000), (0.6, 500))
    ]
    docs = []
    for x in samples:
        h = HdrHistogram(1, 3_600_000_000_000, 3)
        for v in x:
            h.record_value(int(v))
        blob = h.encode()
        docs.append(
            {"histograms": {"sets": blob, "gets": HdrHistogram(1, 3_600_000_000_000, 3).encode()}}
        )
    pooled = np.sort(np.concatenate(samples))
    merged = merge_histograms(docs)
    assert merged.count == len(pooled)
    for p in (1, 25, 50, 90, 99, 99.9):
        exact = pooled[int(np.ceil(p / 100 * len(pooled))) - 1] / 1e6
        assert merged.percentile_ms(p) == pytest.approx(exact, rel=1e-3), p
    assert merged.mean_ms == pytest.approx(pooled.mean() / 1e6, rel=1e-3)


def test_table_without_gets_shows_dashes(memcached):
    r = _run(memcached, ratio="1:0", requests=100)
    lines = r.format_table().splitlines()
    gets = lines[5].split()
    assert gets[0] == "Gets" and gets[1] == "0.00" and gets[4:8] == ["---"] * 4
