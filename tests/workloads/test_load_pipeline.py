"""How the load generator keeps a pipeline full: against a server that answers one request
at a time, a connection with pipeline P never has more than P requests in flight, and a deep
pipeline (P ≥ 3) is refilled once half of it is free — requests arrive in batches of at
least P/2, not one per reply — where a batch costs the kernel and the server less."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from perflab.workloads.kv import KvConfig, run_kv
from servers import LOOPBACK

REPLY_GAP_S = 0.002  # between two replies: each reaches the client on its own


class PacedMemcache:
    """A memcache-text GET server that answers the requests of its one connection one at a
    time, ``REPLY_GAP_S`` apart (each a miss: ``END``), and records, for every read that
    brought requests, how many it brought and how many were in flight before it."""

    def __init__(self) -> None:
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = self.listener.getsockname()[1]
        self.batches: list[tuple[int, int]] = []  # (in flight before, requests read)
        self._lock = threading.Lock()
        self._received = self._answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(0.2)
        replier = threading.Thread(target=self._reply, args=(conn,), daemon=True)
        replier.start()
        buffered = b""
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            buffered += data
            *requests, buffered = buffered.split(b"\r\n")
            gets = sum(1 for r in requests if r.startswith(b"get "))
            if gets:
                with self._lock:
                    self.batches.append((self._received - self._answered, gets))
                    self._received += gets
        self._stop.set()
        replier.join()
        conn.close()

    def _reply(self, conn: socket.socket) -> None:
        while not self._stop.is_set():
            with self._lock:
                due = self._received > self._answered
                if due:
                    self._answered += 1
            if due:
                try:
                    conn.sendall(b"END\r\n")
                except OSError:
                    return
            time.sleep(REPLY_GAP_S)  # paced replies, the point of this server

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.listener.close()


@pytest.mark.parametrize(("pipeline", "least"), [(8, 4), (5, 3), (2, 1), (1, 1)])
def test_a_deep_pipeline_is_refilled_by_halves_and_never_overfilled(pipeline, least):
    server = PacedMemcache()
    try:
        r = run_kv(
            KvConfig(
                server=server.address,
                protocol="memcache_text",
                ratio="0:1",
                requests=120,
                threads=1,
                clients=1,
                pipeline=pipeline,
                key_max=1000,
            )
        )
    finally:
        server.close()
    assert r.status == "complete", r.error
    batches = server.batches
    assert sum(n for _, n in batches) == 120
    assert max(before + n for before, n in batches) <= pipeline  # never more in flight
    # after the first fill, a batch goes out once at least `least` slots are free
    refills = batches[1:-1]
    assert len(refills) >= 120 // pipeline - 2
    assert all(n >= least and before <= pipeline - least for before, n in refills), batches
