"""How the load generator keeps a pipeline full: against a server that answers a connection's
requests in groups of K replies, each group one segment, ``REPLY_GAP_S`` apart, a connection
with pipeline P never has more than P requests in flight, and refills after every read that
completed replies, as memtier does: the K requests a group made room for go out at once, in
one send — never one send per reply, and never waiting for half of the pipeline to be free
(the rule before, which left up to ⌈P/2⌉−1 slots empty for a round trip)."""

from __future__ import annotations

import selectors
import socket
import threading
import time

import pytest
from perflab.workloads.kv import KvConfig, run_kv
from servers import LOOPBACK

REPLY_GAP_S = 0.002  # between two groups of replies: each reaches the client on its own
REFILL_WAIT_S = 1.0  # the longest a group waits for the refill the group before made room for


class PacedMemcache:
    """A memcache-text GET server that answers the requests of its one connection ``group``
    at a time, each group in one segment, ``REPLY_GAP_S`` apart (each reply a miss: ``END``),
    and records, for every read that brought requests, how many it brought and how many
    were in flight before it. One thread reads and answers, and reads whatever has come
    before it answers: a refill the client sent within the gap is counted before the next
    group goes out, however late the thread runs. Until the client's ``quota`` of requests
    has come, the next group also waits (at most ``REFILL_WAIT_S``) for the refill of the
    group before, so a client slowed by a busy machine does not find two groups in one read:
    a client that refills late (at half its pipeline, the rule before) still shows, as one
    larger refill."""

    def __init__(self, group: int, quota: int) -> None:
        self.group = group
        self.quota = quota
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = self.listener.getsockname()[1]
        self.batches: list[tuple[int, int]] = []  # (in flight before, requests read)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        received = answered = 0
        refilled_at = 0  # the requests received once the last group's refill has come
        buffered = b""
        next_reply = time.monotonic() + REPLY_GAP_S
        refill_deadline = next_reply
        with conn, selectors.DefaultSelector() as sel:
            sel.register(conn, selectors.EVENT_READ)
            while not self._stop.is_set():
                now = time.monotonic()
                waiting = received < min(refilled_at, self.quota) and now < refill_deadline
                due_at = refill_deadline if waiting else next_reply
                if sel.select(max(0.0, due_at - now) if received > answered else 0.2):
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    buffered += data
                    *requests, buffered = buffered.split(b"\r\n")
                    gets = sum(1 for r in requests if r.startswith(b"get "))
                    if gets:
                        self.batches.append((received - answered, gets))
                        received += gets
                    continue  # read all that came before answering
                now = time.monotonic()
                waiting = received < min(refilled_at, self.quota) and now < refill_deadline
                if received > answered and now >= next_reply and not waiting:
                    due = min(self.group, received - answered)
                    answered += due
                    try:
                        conn.sendall(b"END\r\n" * due)
                    except OSError:
                        return
                    refilled_at = received + due
                    next_reply = time.monotonic() + REPLY_GAP_S  # paced, the point of this server
                    refill_deadline = next_reply + REFILL_WAIT_S

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.listener.close()


REQUESTS = 120


@pytest.mark.parametrize("io", ["epoll", "auto"])
@pytest.mark.parametrize(("pipeline", "group"), [(8, 3), (8, 1), (5, 2), (2, 1), (1, 1)])
def test_a_pipeline_is_refilled_after_every_read_in_one_send_and_never_overfilled(
    pipeline, group, io
):
    server = PacedMemcache(group, REQUESTS)
    try:
        r = run_kv(
            KvConfig(
                server=server.address,
                protocol="memcache_text",
                ratio="0:1",
                requests=REQUESTS,
                threads=1,
                clients=1,
                pipeline=pipeline,
                key_max=1000,
                io=io,
            )
        )
    finally:
        server.close()
    assert r.status == "complete", r.error
    batches = server.batches
    assert sum(n for _, n in batches) == REQUESTS
    assert batches[0] == (0, pipeline)  # the first fill: the whole pipeline
    assert max(before + n for before, n in batches) <= pipeline  # never more in flight
    # every group of replies is replaced at once: the pipeline is full again after each
    # (the last refill is cut short by the request quota)
    refills = batches[1:-1]
    assert len(refills) >= (REQUESTS - pipeline) // group - 1, batches
    assert all(n == group and before == pipeline - group for before, n in refills), batches
    # in one send per group read, not one per request
    sends = r.to_json()["client"]["syscalls"]["writes"]
    assert sends <= 1 + -(-(REQUESTS - pipeline) // group) + 1, (sends, batches)
