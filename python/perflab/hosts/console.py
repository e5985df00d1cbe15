"""A device's console, captured on the controller while the experiment runs: what a
kernel prints as it boots, panics or hangs, and what it says during the runs (an OOM
kill, a soft lockup). Every source becomes one reader thread appending to one buffer;
each run takes what arrived since the run before (`take`), and a boot that fails is
explained by the last lines (`tail`).

Sources: ``tcp://HOST:PORT`` (a VM's serial port served on TCP, a console server;
connected to and re-connected to until the capture ends), a file or serial device path
(read from its end at the capture's start, as ``tail -f`` does), or the output file of
a command this machine runs (the boot command's own output, or ``cmd:COMMAND``'s).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

#: A kernel's last word: its panic line (Linux), with the reason after the colon.
_PANIC = re.compile(r"^.*(?:Kernel panic - not syncing|panic: ).*$", re.MULTILINE)
#: The most console kept between two takes (a chatty console cannot fill the memory).
MAX_KEPT = 4 * 1024 * 1024
#: Seconds between reads of a file that has nothing new, and between connection attempts.
POLL_S = 0.1


class Console:
    """One device's console; ``close()`` ends the capture (idempotent)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._dropped = 0

    # -- sources
    def follow_tcp(self, address: str) -> None:
        """Reads ``HOST:PORT`` (``tcp://`` stripped), re-connecting whenever it closes."""
        host, _, port = address.removeprefix("tcp://").rpartition(":")
        self._start(self._read_tcp, (host.strip("[]"), int(port)))

    def follow_file(self, path: Path, from_start: bool = False) -> threading.Event:
        """Reads ``path`` as it grows (from its current end unless ``from_start``) until
        the capture ends or the returned event is set (what the file holds by then is
        read first)."""
        done = threading.Event()
        self._start(self._read_file, path, from_start, done)
        return done

    def _start(self, target: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="console")
        self._threads.append(t)
        t.start()

    def _read_tcp(self, address: tuple[str, int]) -> None:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        while not self._closed.is_set():
            try:
                with socket.socket(family, socket.SOCK_STREAM) as s:
                    s.settimeout(POLL_S * 5)
                    s.connect(address)
                    while not self._closed.is_set():
                        try:
                            data = s.recv(65536)
                        except TimeoutError:
                            continue
                        if not data:
                            break
                        self.add(data)
            except OSError:
                pass
            self._closed.wait(POLL_S)

    def _read_file(self, path: Path, from_start: bool, done: threading.Event) -> None:
        offset: int | None = 0 if from_start else None
        while not self._closed.is_set():
            last = done.is_set()
            try:
                with open(path, "rb") as f:
                    if offset is None:
                        offset = f.seek(0, os.SEEK_END)
                    f.seek(offset)
                    data = f.read(1 << 20)
            except OSError:
                data = b""
            if data:
                offset = (offset or 0) + len(data)
                self.add(data)
            elif last:
                return
            else:
                done.wait(POLL_S)

    # -- what was captured
    def add(self, data: bytes) -> None:
        with self._lock:
            self._buf += data
            if len(self._buf) > MAX_KEPT:
                cut = len(self._buf) - MAX_KEPT
                del self._buf[:cut]
                self._dropped += cut

    def take(self) -> bytes:
        """What arrived since the last take (the oldest part cut beyond `MAX_KEPT`)."""
        with self._lock:
            data, dropped = bytes(self._buf), self._dropped
            self._buf.clear()
            self._dropped = 0
        if dropped:
            data = f"[... perflab: {dropped} bytes of console omitted ...]\n".encode() + data
        return data

    def panic(self) -> str | None:
        """The first line since the last take that says the kernel gave up (a panic), or
        None: such a boot will never answer, whatever its timeout."""
        with self._lock:
            text = bytes(self._buf[-(1 << 20) :]).decode("utf-8", "replace")
        m = _PANIC.search(text)
        return m.group(0).strip() if m else None

    def tail(self, lines: int = 3) -> str:
        """The last non-empty lines since the last take, joined by `` / `` (one line)."""
        with self._lock:
            text = bytes(self._buf[-8192:]).decode("utf-8", "replace")
        kept = [x.strip() for x in text.replace("\r", "\n").splitlines() if x.strip()]
        return " / ".join(kept[-lines:])

    def close(self) -> None:
        self._closed.set()
        for t in self._threads:
            with contextlib.suppress(RuntimeError):
                t.join(timeout=2)
        self._threads = []
