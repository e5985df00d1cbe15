"""memcached answers every text GET with a segment of its own, so at pipeline 8 a client gets
its replies one segment at a time. perflab read (and woke up) at each one: its client slept
and was woken — by the server, which pays for every wake-up — several times per batch of
requests, and reached 0.89× memtier_benchmark's throughput there (issue 26). Now a reply is
timed by the kernel's receive timestamp, and the io_uring loop, when it has nothing to do,
waits until every connection awaiting replies has some (50 µs at most) before it reads:

- a reply is timed when it arrived, not when the client got round to reading it: a client
  stopped (SIGSTOP) while its replies come in still times them as they came, in both I/O loops;
- at text pipeline 8 over many connections the io_uring loop waits at most once per 8 replies
  (waking at each reply's segment, it waited 2–3 times as often).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import threading
import time

import pytest
from perflab.hosts.process import installed_program
from perflab.workloads.kv import KvConfig, KvConfigError, KvResult, run_kv
from servers import LOOPBACK

STOP_S = 0.3  # each time the client is stopped
STOPS = 3
CONNECTIONS = 8


class InstantMemcache:
    """A memcache-text server answering every GET at once with a miss (``END``), each reply
    in a segment of its own, on any number of connections (one thread, a selector)."""

    def __init__(self) -> None:
        self.listener = socket.create_server((LOOPBACK, 0))
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ)
        pending: dict[socket.socket, bytes] = {}
        while not self._stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                s = key.fileobj
                assert isinstance(s, socket.socket)
                if s is self.listener:
                    conn, _ = self.listener.accept()
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sel.register(conn, selectors.EVENT_READ)
                    pending[conn] = b""
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
                    pending.pop(s, None)
                    continue
                *lines, pending[s] = (pending[s] + data).split(b"\r\n")
                try:
                    for line in lines:
                        if line.startswith(b"get "):
                            s.sendall(b"END\r\n")  # one segment per reply (TCP_NODELAY)
                except OSError:
                    pass
        for key in list(sel.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        sel.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def kth_largest_ms(result: KvResult, k: int) -> float:
    """The k-th largest latency of the run (ms)."""
    lat = result.latency()
    n = lat.count
    return lat.percentile_ms(100 * (n - k + 0.5) / n)


@pytest.mark.parametrize("io", ["uring", "epoll"])
def test_a_reply_is_timed_by_its_arrival_not_by_when_it_was_read(io):
    program = installed_program("perflab-load")
    assert program is not None, "perflab-load is not built (run scripts/setup)"
    server = InstantMemcache()
    cfg = KvConfig(
        server=server.address,
        protocol="memcache_text",
        ratio="0:1",
        threads=1,
        clients=CONNECTIONS,
        pipeline=1,
        test_time=1.0 + STOPS * 2 * STOP_S,
        key_max=1000,
        io=io,
    )
    try:
        client = subprocess.Popen(
            [str(program), json.dumps(cfg.to_engine())],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(0.6)
        for _ in range(STOPS):
            # each connection has its request in flight; the server answers it at once, and
            # the client reads the answer STOP_S later
            os.kill(client.pid, signal.SIGSTOP)
            time.sleep(STOP_S)
            os.kill(client.pid, signal.SIGCONT)
            time.sleep(STOP_S)
        out, err = client.communicate(timeout=60)
    finally:
        server.close()
    assert client.returncode == 0, err
    result = KvResult(json.loads(out))
    assert result.status == "complete", result.error
    if io == "uring" and result.io != "uring":
        pytest.skip("io_uring is not available here")
    # read after their arrival by STOP_S, up to CONNECTIONS replies per stop; timed by their
    # arrival, none of them is slow. The one exception: requests whose send time was taken
    # just before a stop and that were sent after it (at most CONNECTIONS, once in a while).
    assert kth_largest_ms(result, CONNECTIONS + 1) < STOP_S * 1e3 / 2, result.format_summary()


def min_wait_kernel() -> bool:
    """Linux ≥ 6.12: io_uring's minimum wait, which lets the loop wait for a batch."""
    release = os.uname().release.split("-")[0].split(".")
    major, minor = int(release[0]), int(release[1]) if len(release) > 1 else 0
    return (major, minor) >= (6, 12)


def test_a_text_pipeline_is_read_in_batches_not_a_wake_up_per_reply(memcached):
    if not min_wait_kernel():
        pytest.skip("the kernel has no io_uring minimum wait (Linux < 6.12): no batches")
    try:
        r = run_kv(
            KvConfig(
                server=memcached.address,
                protocol="memcache_text",
                ratio="0:1",  # every GET answered in a segment of its own
                threads=1,
                clients=16,
                pipeline=8,
                requests=2000,
                key_max=1000,
                io="uring",
            )
        )
    except KvConfigError as e:
        assert "io_uring is not available here" in str(e)
        pytest.skip("io_uring is not available here")
    assert r.status == "complete" and r.ok, r.error
    replies = r.metrics()["requests"]
    assert replies == 16 * 2000
    calls = r.to_json()["client"]["syscalls"]
    # a wait per batch of replies; waking at each reply's segment took 0.1-0.3 per reply here
    assert calls["polls"] <= replies / 8, calls
