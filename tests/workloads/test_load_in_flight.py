"""The result records how many requests a connection had in flight on average, so that
"pipeline 8" is seen to mean what it does: against a real slow server on loopback — an
asyncio memcache-text server that answers every request a fixed delay after it arrived — a
closed-loop run with pipeline P has nearly P requests in flight per connection on average (a
connection refills after every read that completed replies, as memtier does; refilling by
halves left 7.1-7.9 of 8); the figure is in the result's JSON, its metrics and its summary
line."""

from __future__ import annotations

import asyncio
import threading

import pytest
from perflab.workloads.kv import KvConfig, run_kv
from servers import LOOPBACK

REPLY_DELAY_S = 0.02  # every reply this long after its request arrived
START_TIMEOUT_S = 10.0


class SlowMemcache:
    """A memcache-text server (GETs only, every one a miss: ``END``) on 127.0.0.1 that
    answers each request ``REPLY_DELAY_S`` after it read it, whatever else is pending: the
    server is slow, not serial, so a client's whole pipeline is outstanding meanwhile."""

    def __init__(self) -> None:
        self.port = 0
        self.requests = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stopped: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S) or not self.port:
            raise RuntimeError("the slow memcache server did not start")

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._client, LOOPBACK, 0)
        self.port = server.sockets[0].getsockname()[1]
        self._stopped = self._loop.create_future()
        self._ready.set()
        async with server:
            await self._stopped

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        try:
            while line := await reader.readline():
                if line.startswith(b"get "):
                    self.requests += 1
                    loop.call_later(REPLY_DELAY_S, writer.write, b"END\r\n")
        except ConnectionError:
            pass
        finally:
            writer.close()

    def close(self) -> None:
        def stop() -> None:
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(timeout=START_TIMEOUT_S)


@pytest.fixture
def slow_server():
    server = SlowMemcache()
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
