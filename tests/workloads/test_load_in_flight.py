"""The result records how many requests a connection had in flight on average, so that
"pipeline 8" is seen to mean what it does: against a real slow server on loopback — an
asyncio memcache-text server that answers every request a fixed delay after it arrived — a
closed-loop run with pipeline P has nearly P requests in flight per connection on average (a
connection refills after every read that completed replies, as memtier does; refilling by
halves left 7.1-7.9 of 8); the figure is in the result's JSON, its metrics and its summary
line."""

from __future__ import annotations

import pytest
from perflab.workloads.kv import KvConfig, run_kv
from servers import SlowMemcache

REPLY_DELAY_S = 0.02  # every reply this long after its request arrived


@pytest.fixture
def slow_server():
    server = SlowMemcache(REPLY_DELAY_S)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("pipeline", [8, 1])
def test_a_pipeline_of_p_keeps_p_requests_in_flight_per_connection(slow_server, pipeline):
    per_connection = 25 * pipeline  # 25 round trips of the whole pipeline
    r = run_kv(
        KvConfig(
            server=slow_server.address,
            protocol="memcache_text",
            ratio="0:1",
            requests=per_connection,
            threads=1,
            clients=2,
            pipeline=pipeline,
            key_max=1000,
        )
    )
    assert r.status == "complete", r.error
    m = r.metrics()
    assert m["requests"] == 2 * per_connection == slow_server.requests
    in_flight = m["avg_in_flight_per_connection"]
    # never more than P, and nearly P: only the client's turn-around after each read and the
    # last round trip's drain are missing
    assert 0.9 * pipeline <= in_flight <= pipeline * 1.001, in_flight
    doc = r.to_json()
    assert doc["metrics"]["avg_in_flight_per_connection"] == in_flight
    assert f"({in_flight:.1f} in flight per connection)" in r.format_summary()
