"""benchmarks/load_vs_peers' own pieces.

The bound is fair only if its minimal client runs the row's load: keys drawn as the row's
are (memtier's G in the rows of memtier's flags), spread over the key range as a load that
draws every key afresh spreads them, and reaching the server in an order that does not
repeat them sooner than such a load. It once cycled 8,192 uniform keys in every row, so
the server found its items in cache and did less per request under it than under the
clients it is compared with, which lifted the bound. The minimal client is compiled from
the script and asked for its pre-built requests, or run against a recording server.

The sleeps each row reports: the server's are its busiest thread's, read from /proc."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from perflab.hosts.proc_text import parse_pid_stat
from proc_helpers import all_gone, wait_until
from servers import LOOPBACK

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "load_vs_peers"

pytestmark = pytest.mark.skipif(
    shutil.which("gcc") is None and shutil.which("cc") is None, reason="needs gcc"
)


@pytest.fixture(scope="module")
def lvp():
    loader = importlib.machinery.SourceFileLoader("load_vs_peers", str(SCRIPT))
    spec = importlib.util.spec_from_loader("load_vs_peers", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exe(lvp, tmp_path_factory):
    return lvp.build_minimal_client(tmp_path_factory.mktemp("minimal"))


def requests(exe, pattern: str, n: int, keymax: int = 100_000, ratio=(0, 1)) -> list[tuple]:
    """The minimal client's pre-built requests: (command, key number)."""
    argv = [str(exe), "127.0.0.1", "1", "memcache_binary", "0", "8", "1"]
    argv += [str(ratio[0]), str(ratio[1]), str(keymax), "100", "memtier-", pattern, str(n)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    out = [line.split() for line in done.stdout.splitlines()]
    return [(cmd, int(key.removeprefix("memtier-"))) for cmd, key in out]


def test_the_rows_of_memtiers_flags_draw_gaussian_keys(lvp):
    assert lvp.get_key_pattern(lvp.MEMTIER_FLAGS) == "G"
    assert lvp.get_key_pattern(["--key-pattern", "S:G"]) == "G"
    assert lvp.get_key_pattern(["--ratio", "1:10"]) == "R"  # memtier's default


def test_gaussian_keys_are_memtiers_g(lvp, exe):
    reqs = requests(exe, "G", lvp.MINIMAL_REQUESTS)
    keys = [k for _, k in reqs]
    assert len(keys) == lvp.MINIMAL_REQUESTS >= 2 * lvp.KEYS
    assert {c for c, _ in reqs} == {"get"}
    assert min(keys) >= 1 and max(keys) <= 100_000
    # memtier: median 99,999 / 2 + 1.5, sd 99,999 / 6 truncated at ±3 sd (0.9866 sd),
    # truncated to integers; the standard error of either is below 40 at 262,144 draws
    assert statistics.fmean(keys) == pytest.approx(50_000.5, abs=250)
    assert statistics.pstdev(keys) == pytest.approx(0.9866 * 99_999 / 6, abs=250)
    within_one_sd = sum(abs(k - 50_000.5) <= 99_999 / 6 for k in keys) / len(keys)
    assert within_one_sd == pytest.approx(0.683, abs=0.01)  # uniform keys: 0.333
    # spread as a load that draws afresh: the keys a load's first 262,144 requests touch
    assert len(set(keys)) > 60_000


def test_uniform_keys_stay_uniform_over_the_whole_range(lvp, exe):
    reqs = requests(exe, "R", lvp.MINIMAL_REQUESTS, ratio=(1, 10))
    keys = [k for _, k in reqs]
    assert min(keys) >= 1 and max(keys) <= 100_000
    assert statistics.fmean(keys) == pytest.approx(50_000.5, abs=250)
    assert statistics.pstdev(keys) == pytest.approx(100_000 / 12**0.5, abs=250)
    # 262,144 uniform draws over 100,000 keys leave e^-2.6 of them out: ~92,700 touched
    assert len(set(keys)) > 90_000
    sets = sum(c == "set" for c, _ in reqs) / len(reqs)
    assert sets == pytest.approx(1 / 11, abs=0.01)


class KeyRecorder:
    """A memcached binary-protocol server on loopback that answers every request "Not
    found" and records the keys in the order it reads them, across all connections."""

    def __init__(self) -> None:
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = self.listener.getsockname()[1]
        self.keys: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        sel = selectors.DefaultSelector()
        self.listener.setblocking(False)
        sel.register(self.listener, selectors.EVENT_READ)
        pending: dict[socket.socket, bytes] = {}
        body = b"Not found"
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.listener:
                    conn, _ = sock.accept()
                    sel.register(conn, selectors.EVENT_READ)
                    pending[conn] = b""
                    continue
                try:
                    data = sock.recv(1 << 16)
                except ConnectionResetError:  # the client exits without closing
                    data = b""
                if not data:
                    sel.unregister(sock)
                    sock.close()
                    continue
                buf, out, pos = pending[sock] + data, [], 0
                while len(buf) - pos >= 24:
                    op, klen, elen, blen, opaque = struct.unpack_from(">xBHB3xII", buf, pos)
                    if len(buf) - pos < 24 + blen:
                        break
                    start = pos + 24 + elen
                    self.keys.append(buf[start : start + klen])
                    out.append(struct.pack(">BBHBBHII8x", 0x81, op, 0, 0, 0, 1, len(body), opaque))
                    out.append(body)
                    pos += 24 + blen
                pending[sock] = buf[pos:]
                sock.sendall(b"".join(out))
        for sock in pending:
            sock.close()
        sel.close()
        self.listener.close()


def repeat_share(keys: list[bytes], window: int) -> float:
    """The share of requests (after the first `window`) whose key was asked for in the
    `window` requests before them."""
    last: dict[bytes, int] = {}
    repeats = 0
    for i, key in enumerate(keys):
        if i >= window and i - last.get(key, -window - 1) <= window:
            repeats += 1
        last[key] = i
    return repeats / (len(keys) - window)


def test_connections_do_not_replay_each_others_keys(lvp, exe):
    """On the wire, the minimal client's keys come back as seldom as an independent draw's.
    Its connections once started 997 requests apart in one cycle of pre-built requests, so
    every key was asked for by all of them within a few thousand requests: memcached found
    it freshly bumped and its segmented LRU did a quarter of the work per request it does
    under perflab and memtier (moves to WARM 0.09 per request against 0.35)."""
    recorder = KeyRecorder()
    try:
        argv = [str(exe), LOOPBACK, str(recorder.port), "memcache_binary", "4", "8", "1.5"]
        argv += ["0", "1", "100000", "100", "memtier-", "G", str(lvp.MINIMAL_REQUESTS)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    finally:
        recorder.stop.set()
        recorder.thread.join(timeout=10)
    assert done.returncode == 0, done.stderr
    wire = recorder.keys
    assert len(wire) >= 20_000, f"only {len(wire)} requests reached the recorder"
    drawn = [f"memtier-{n}".encode() for _, n in requests(exe, "G", len(wire))]
    # an independent Gaussian draw over 100,000 keys repeats 8% of keys within 5,000
    # requests; connections that started 997 requests apart repeated 24%
    expected = repeat_share(drawn, 5_000)
    assert 0.03 < expected < 0.2
    assert repeat_share(wire, 5_000) == pytest.approx(expected, abs=0.03)


def test_the_servers_sleeps_are_its_busiest_threads(lvp):
    """memcached's LRU maintainer sleeps on a timer whatever the load; the worker thread's
    sleeps are the ones a client's pace decides."""
    before = {"1": (10, 100), "2": (500, 5), "3": (7, 0)}
    after = {"1": (14, 400), "2": (900, 6), "3": (7, 0), "4": (3, 1)}
    assert lvp.server_sleeps(before, after) == 4  # thread 1: 300 ticks, 4 sleeps
    assert lvp.server_sleeps({}, {}) == 0


def test_a_threads_sleeps_are_read_from_proc(lvp):
    tid = str(threading.get_native_id())
    before = lvp.server_threads(os.getpid())
    assert tid in before and all(s >= 0 and t >= 0 for s, t in before.values())
    for _ in range(3):
        time.sleep(0.001)
    after = lvp.server_threads(os.getpid())
    assert after[tid][0] >= before[tid][0] + 3


def test_a_ratio_is_shown_as_it_compares_with_its_goal(lvp):
    """A throughput ratio of 0.995 printed as "1.00×" beside "goal not met" contradicts
    itself: the figures get the decimals that keep their order."""
    assert lvp.decimals(1.2, 1.0) == 2
    assert lvp.decimals(1.0, 1.0) == 2
    assert lvp.decimals(0.9953, 1.0) == 3  # 0.995× against 1.000×
    assert lvp.decimals(1.3449, 1.345) == 4  # 1.3449× against 1.3450×
    for value, limit in ((0.9953, 1.0), (1.3449, 1.345), (1.0049, 1.0)):
        d = lvp.decimals(value, limit)
        assert (round(value, d) >= round(limit, d)) == (value >= limit)


def test_perflabs_spins_are_shown_per_1000_requests(lvp):
    runs = [
        {"n": 10_000, "spin": {"spins": 900, "caught": 810, "seconds": 0.009}},
        {"n": 20_000, "spin": {"spins": 1000, "caught": 950, "seconds": 0.01}},
        {"n": 10_000, "spin": {"spins": 0, "caught": 0, "seconds": 0.0}},
    ]
    line, row = lvp.spin_line(runs)
    assert row == {"spins_per_1k_requests": 50.0, "caught": 0.9, "us_per_request": 0.5}
    assert line.strip() == (
        "perflab spun before sleeping 50.0 times per 1,000 requests (90% saw a reply come), "
        "0.50 µs per request"
    )
    assert lvp.spin_line([{"n": 1, "ops": 1.0}]) is None  # a peer's runs: no such line


def test_a_run_the_hypervisor_stole_from_is_run_again(lvp, monkeypatch):
    """Steal on a watched CPU above STOLEN reruns the run; the least stolen attempt is kept,
    with how many times it ran again."""
    readings = iter(
        [
            {0: (0, 0), 1: (0, 0)},
            {0: (10, 100), 1: (1, 100)},  # 10% of CPU 0 stolen: again
            {0: (10, 100), 1: (1, 100)},
            {0: (11, 200), 1: (2, 200)},  # 1%: kept
        ]
    )
    monkeypatch.setattr(lvp, "cpu_ticks", lambda cpus: next(readings))
    made = iter(range(10))
    r = lvp.unstolen(lambda: {"n": 1, "ops": next(made)}, None)
    assert (r["ops"], r["reruns"], r["stolen"]) == (1, 1, 0.01)
    # stolen every time: the least stolen of the STOLEN_RETRIES + 1 attempts
    shares = iter([0.5, 0.05, 0.3, 0.2, 0.9])
    ticks = iter(t for share in shares for t in ({0: (0, 0)}, {0: (round(share * 100), 100)}))
    monkeypatch.setattr(lvp, "cpu_ticks", lambda cpus: next(ticks))
    r = lvp.unstolen(lambda: {"n": 1, "ops": next(made)}, None)
    assert (r["ops"], r["reruns"], r["stolen"]) == (3, lvp.STOLEN_RETRIES, 0.05)


def test_steal_is_read_per_cpu_from_proc(lvp):
    cpus = os.sched_getaffinity(0)
    ticks = lvp.cpu_ticks(cpus)
    assert set(ticks) == cpus and all(0 <= st <= total for st, total in ticks.values())
    assert 0.0 <= lvp.stolen_share(ticks, lvp.cpu_ticks(cpus)) <= 1.0


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`: {pid: command name}."""
    out = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = parse_pid_stat((d / "stat").read_text())
        except OSError:  # ended meanwhile
            continue
        if stat is not None and stat.ppid == pid:
            out[int(d.name)] = stat.name
    return out


def test_a_sigterm_stops_the_servers_it_started(tmp_path):
    """Stopped with SIGTERM in the middle of a run, the script stops the memcached it
    started and the client that is running, and exits 143 (it once left them running)."""
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--connections", "20", "--seconds", "60", "--no-pin"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:

        def running() -> bool:  # memcached and the perflab client under way
            names = list(_children(proc.pid).values())
            return ("memcached" in names and len(names) >= 2) or proc.poll() is not None

        wait_until(running, 60)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        started = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
        all_gone(list(started))  # names the pids that outlived the script
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
