"""Faults: every one ends the run within a bounded time, with a message saying what
happened, and a result reporting what completed before. Bad input is refused up front,
naming the option."""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import threading
import time

import pytest
from perflab.errors import InputError
from perflab.workloads.kv import KvConfig, KvConfigError, run_kv
from pydantic import ValidationError
from servers import free_port

#: Generous bound on how long a faulted run may take beyond its configured timeouts:
#: a hang check, not a speed target.
SLACK_S = 10.0


def timed_run(cfg: KvConfig, **kw):
    t0 = time.monotonic()
    r = run_kv(cfg, **kw)
    return r, time.monotonic() - t0


class FakeRedis(socketserver.ThreadingTCPServer):
    """A tiny RESP server on loopback: answers SET/GET correctly for `good` requests per
    connection, then misbehaves: `mode` "garbage" (answers an HTTP line) or "close"."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, good: int, mode: str):
        self.good, self.mode = good, mode
        super().__init__(("127.0.0.1", 0), self._Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    class _Handler(socketserver.StreamRequestHandler):
        def handle(self):
            served = 0
            while True:
                header = self.rfile.readline()
                if not header:
                    return
                args = []
                for _ in range(int(header[1:])):
                    size = int(self.rfile.readline()[1:])
                    args.append(self.rfile.read(size + 2)[:-2])
                if served >= self.server.good:
                    if self.server.mode == "close":
                        return
                    self.wfile.write(b"HTTP/1.1 400 Bad Request\r\n")
                    self.wfile.flush()
                    time.sleep(0.2)
                    return
                self.wfile.write(b"+OK\r\n" if args[0] == b"SET" else b"$-1\r\n")
                served += 1

    def close(self):
        self.shutdown()
        self.server_close()


def test_unreachable_server_fails_at_once():
    port = free_port()  # nothing listens there
    r, took = timed_run(
        KvConfig(
            server=f"127.0.0.1:{port}",
            protocol="memcache_text",
            threads=2,
            clients=5,
            connect_timeout="2s",
        )
    )
    assert r.status == "failed"
    assert "cannot connect" in r.error and "refused" in r.error.lower()
    assert r.metrics()["connection_failures"] >= 1 and r.metrics()["requests"] == 0
    assert took < 2 + SLACK_S


def test_server_that_never_accepts_times_out_connecting():
    # a listener with a full accept queue: SYNs are dropped, connect() never completes
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    fillers = []
    for _ in range(4):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(lst.getsockname())
        fillers.append(s)
    time.sleep(0.2)
    try:
        port = lst.getsockname()[1]
        r, took = timed_run(
            KvConfig(
                server=f"127.0.0.1:{port}",
                protocol="redis",
                threads=1,
                clients=20,
                connect_timeout="1s",
            )
        )
        assert r.status == "failed"
        assert "no answer within 1.0 s" in r.error, r.error
        assert took < 1 + SLACK_S
    finally:
        for s in fillers:
            s.close()
        lst.close()


def test_server_killed_mid_run(memcached):
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        test_time="30s",
        threads=2,
        clients=4,
        pipeline=4,
        key_max=1_000,
    )
    threading.Timer(0.7, memcached.kill).start()
    r, took = timed_run(cfg)
    assert r.status == "failed"
    assert "closed the connection" in r.error or "reset" in r.error.lower(), r.error
    m = r.metrics()
    assert m["requests"] > 0  # what completed before the crash is reported
    assert 0.3 < m["duration_s"] < 0.7 + SLACK_S
    assert m["connection_failures"] >= 1
    assert took < 0.7 + SLACK_S


def test_server_stopped_mid_run_hits_the_response_timeout(memcached):
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_binary",
        test_time="30s",
        threads=1,
        clients=3,
        key_max=1_000,
        response_timeout="1s",
    )
    threading.Timer(0.5, memcached.pause).start()
    try:
        r, took = timed_run(cfg)
    finally:
        memcached.resume()
    assert r.status == "failed"
    assert "stopped answering" in r.error and "1.0 s" in r.error, r.error
    m = r.metrics()
    assert m["requests"] > 0 and m["errors"] >= 1  # the requests in flight are lost
    assert took < 0.5 + 1 + SLACK_S


@pytest.mark.parametrize("mode", ["garbage", "close"])
def test_server_misbehaving_after_some_replies(mode):
    fake = FakeRedis(good=50, mode=mode)
    try:
        cfg = KvConfig(
            server=fake.address,
            protocol="redis",
            requests=1_000,
            threads=1,
            clients=2,
            pipeline=1,
            key_max=100,
        )
        r, took = timed_run(cfg)
    finally:
        fake.close()
    assert r.status == "failed"
    if mode == "garbage":
        assert "invalid redis reply after 50 good ones" in r.error and "HTTP/1.1 400" in r.error, (
            r.error
        )
    else:
        assert "closed the connection (50 replies received on it" in r.error, r.error
    m = r.metrics()
    assert 50 <= m["requests"] <= 100
    assert took < SLACK_S


def test_stop_event_returns_partial_results_promptly(memcached):
    stop = threading.Event()
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        test_time="60s",
        threads=2,
        clients=2,
        key_max=1_000,
    )
    threading.Timer(0.5, stop.set).start()
    r, took = timed_run(cfg, stop=stop)
    assert r.status == "stopped" and r.error is None
    assert r.metrics()["requests"] > 0
    assert took < 0.5 + SLACK_S


def test_keyboard_interrupt_carries_the_partial_result(memcached):
    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        test_time="60s",
        threads=1,
        clients=2,
        key_max=1_000,
    )
    seen = []
    # Ctrl-C as a terminal sends it: to the process, with Python's own handler in place
    # and SIGINT deliverable here, whatever earlier tests of this process left behind.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            run_kv(cfg, progress=seen.append, progress_interval=0.1)
    finally:
        timer.cancel()
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - t0 < 0.5 + SLACK_S
    partial = info.value.partial_result
    assert partial.status == "stopped" and partial.metrics()["requests"] > 0
    assert seen and seen[-1].phase == "measuring" and seen[-1].requests_done > 0


def test_progress_exceptions_stop_the_run_and_propagate(memcached):
    def boom(p):
        raise RuntimeError("observer broke")

    cfg = KvConfig(
        server=memcached.address,
        protocol="memcache_text",
        test_time="60s",
        threads=1,
        clients=1,
        key_max=100,
    )
    with pytest.raises(RuntimeError, match="observer broke") as info:
        run_kv(cfg, progress=boom, progress_interval=0.0)
    assert info.value.partial_result.status == "stopped"


@pytest.mark.parametrize(
    "table, field, words",
    [
        ({"protocol": "memcache_udp"}, "protocol", "memcache_text"),
        ({"key_pattern": "Q:G"}, "key_pattern", "unknown key pattern"),
        ({"ratio": "0:0"}, "ratio", "sends nothing"),
        ({"ratio": "1-10"}, "ratio", "SET:GET"),
        ({"key_min": 100, "key_max": 10}, "key_min", "greater than key_max"),
        ({"requests": "allkeys", "ratio": "1:1"}, "ratio", "N:0"),
        (
            {"key_pattern": "P:P", "key_min": 1, "key_max": 10, "threads": 4, "clients": 50},
            "key_pattern",
            "fewer keys",
        ),
        ({"key_median": 5e7}, "key_median", "outside the key range"),
        ({"key_zipf_exp": 7}, "key_zipf_exp", "less than 5"),
        ({"test_time": "soon"}, "test_time", "bad duration"),
        ({"test_time": "1s", "requests": 10}, "test_time", "not both"),
        ({"data_size": "500-20"}, "data_size", "min <= max"),
        ({"server": ["a:1", "b:2", "c:3"], "threads": 1, "clients": 2}, "server", "at least one"),
        ({"pipelin": 8}, "pipelin", "did you mean 'pipeline'"),
    ],
)
def test_bad_configs_name_the_field(table, field, words):
    with pytest.raises(ValidationError) as info:
        KvConfig.model_validate(table)
    err = info.value.errors()[0]
    assert err["loc"] == (field,)
    with pytest.raises(KvConfigError) as info:
        run_kv(table)
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_unresolvable_host_is_bad_input():
    with pytest.raises(InputError, match=r"server: cannot resolve 'no-such-host\.invalid'"):
        run_kv(KvConfig(server="no-such-host.invalid:11211", protocol="memcache_text", requests=1))
