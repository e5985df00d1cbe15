"""Real servers on loopback for tests: memcached and redis-server on free ports.

    from servers import start_memcached
    with start_memcached(memory_mb=64) as mc:
        mc.address            # "127.0.0.1:PORT"
        mc.stats()["curr_items"]
        mc.pause(); mc.resume()   # SIGSTOP / SIGCONT
        mc.kill()

`start_memcached` / `start_redis` return a `Server` (also a context manager that stops
it). conftest.py turns them into the fixtures ``memcached`` and ``redis_server``.
Servers listen on 127.0.0.1 only and run in a temporary directory. A missing binary
is a test failure, never a skip: ``scripts/setup`` installs memcached and redis-server.

`SlowMemcache(delay)` is a memcache-text server of this file's own (asyncio, in a thread)
that answers every GET ``delay`` seconds after it came.

Independent readers (not perflab's code) check what a load wrote:
`memcache_get_many` (text protocol multi-get) and `redis_get_many` (RESP MGET).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"
READY_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the caller retries if it is taken meanwhile)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class Server:
    """A server process on 127.0.0.1:`port`."""

    def __init__(
        self, name: str, argv: list[str], port: int, probe: bytes, expect: bytes, workdir: Path
    ):
        self.name = name
        self.port = port
        self.workdir = workdir
        self._log = open(workdir / f"{name}.log", "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir)
        self._probe, self._expect = probe, expect

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Until the server answers its probe (memcached `version`, redis `PING`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode} at start: {self.log()[-500:]}"
                )
            try:
                with socket.create_connection((LOOPBACK, self.port), timeout=1.0) as s:
                    s.sendall(self._probe)
                    if s.recv(256).startswith(self._expect):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.name} on port {self.port} not ready within {timeout:g} s")

    def log(self) -> str:
        self._log.flush()
        return (self.workdir / f"{self.name}.log").read_text(errors="replace")

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.alive():
            self.proc.kill()
            self.proc.wait(5)

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def stats(self) -> dict[str, str]:
        """memcached's `stats` (name → value)."""
        text = _exchange(self.port, b"stats\r\n", b"END\r\n").decode()
        return {
            parts[1]: parts[2]
            for line in text.splitlines()
            if len(parts := line.split(" ", 2)) == 3 and parts[0] == "STAT"
        }

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise RuntimeError(
            f"{binary} is not installed: run scripts/setup (Debian package "
            f"{'memcached' if binary == 'memcached' else 'redis-server'})"
        )
    return path


def _start(make_argv, name: str, probe: bytes, expect: bytes) -> Server:
    last: Exception | None = None
    for _ in range(5):  # the free port may be taken between probing and binding
        port = free_port()
        workdir = Path(tempfile.mkdtemp(prefix=f"perflab-{name}-"))
        server = Server(name, make_argv(port, workdir), port, probe, expect, workdir)
        try:
            server.wait_ready()
            return server
        except RuntimeError as e:
            last = e
            server.stop()
    raise RuntimeError(f"could not start {name}: {last}")


def start_memcached(
    memory_mb: int = 64, threads: int = 2, max_connections: int = 4096, extra: tuple[str, ...] = ()
) -> Server:
    """memcached on 127.0.0.1 (UDP off)."""
    binary = _require("memcached")

    def argv(port: int, workdir: Path) -> list[str]:
        cmd = [
            binary,
            "-l",
            LOOPBACK,
            "-p",
            str(port),
            "-U",
            "0",
            "-m",
            str(memory_mb),
            "-t",
            str(threads),
            "-c",
            str(max_connections),
            *extra,
        ]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses to run as root without -u
        return cmd

    return _start(argv, "memcached", b"version\r\n", b"VERSION")


def start_redis(extra: tuple[str, ...] = ()) -> Server:
    """redis-server on 127.0.0.1, no persistence."""
    binary = _require("redis-server")

    def argv(port: int, workdir: Path) -> list[str]:
        return [
            binary,
            "--port",
            str(port),
            "--bind",
            LOOPBACK,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            *extra,
        ]

    return _start(argv, "redis", b"PING\r\n", b"+PONG")


# ----- independent readers ------------------------------------------------------------


def _exchange(port: int, request: bytes, until: bytes, timeout: float = 10.0) -> bytes:
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
        s.sendall(request)
        buf = bytearray()
        while not buf.endswith(until):
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError(f"connection closed after {len(buf)} bytes")
            buf += chunk
        return bytes(buf)


def memcache_get_many(port: int, keys: list[str], batch: int = 100) -> dict[str, bytes]:
    """Values of `keys` present on a memcached (text-protocol multi-get)."""
    out: dict[str, bytes] = {}
    for i in range(0, len(keys), batch):
        data = _exchange(
            port, b"get " + " ".join(keys[i : i + batch]).encode() + b"\r\n", b"END\r\n"
        )
        pos = 0
        while not data.startswith(b"END\r\n", pos):
            eol = data.index(b"\r\n", pos)
            _, key, _flags, size = data[pos:eol].split(b" ")[:4]
            start = eol + 2
            out[key.decode()] = data[start : start + int(size)]
            pos = start + int(size) + 2
    return out


def redis_get_many(port: int, keys: list[str], batch: int = 100) -> dict[str, bytes]:
    """Values of `keys` present on a redis-server (MGET over RESP)."""
    out: dict[str, bytes] = {}
    with socket.create_connection((LOOPBACK, port), timeout=10) as s:
        reader = s.makefile("rb")
        for i in range(0, len(keys), batch):
            chunk = keys[i : i + batch]
            cmd = [b"MGET", *[k.encode() for k in chunk]]
            s.sendall(b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd))
            header = reader.readline()
            assert header.startswith(b"*"), header
            for key in chunk:
                size = int(reader.readline()[1:])
                if size >= 0:
                    out[key] = reader.read(size + 2)[:-2]
    return out


class SlowMemcache:
    """A memcache-text server (GETs only, every one a miss: ``END``) on 127.0.0.1 that
    answers each request ``delay`` seconds after it read it, whatever else is pending: the
    server is slow, not serial, so a client's whole pipeline is outstanding meanwhile."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.port = 0
        self.requests = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stopped: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_S) or not self.port:
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
                    loop.call_later(self.delay, writer.write, b"END\r\n")
        except ConnectionError:
            pass
        finally:
            writer.close()

    def close(self) -> None:
        def stop() -> None:
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(timeout=READY_TIMEOUT_S)
