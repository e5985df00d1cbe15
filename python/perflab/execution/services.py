"""Services: long-running processes a scope needs (a server under test), started, waited
for until ready, and stopped — their whole process group, with grace — at the scope's end.

A service runs as any step does (`Host.run`, through ``perflab-exec``: its own
session, measured, everything it starts held), on a thread of its own for as long as it
lives; stopping it is the step's stop request. One that daemonizes (``memcached -d``)
exits at once and leaves its daemon held by the shim: that is a running service too, and
stopping it stops the daemon (the thread that started it lives until then: the shim's
parent-death signal is tied to that thread). One that exits before it is ready and
leaves nothing running (with status 0 too: a VM whose kernel panicked) can never become
ready: it fails at once, with its exit status and the last lines of its output.
Readiness, polled until ``ready_timeout``:

- ``tcp://HOST:PORT``: a TCP connection is accepted — and, for a service on another host,
  not closed by the peer within ``SETTLE_S``: what is reached from here is often a port
  forwarder (QEMU's user-mode network, an SSH tunnel), which accepts before anything
  listens behind it, then resets the connection;
- ``unix:///path``: a connection to the Unix socket is accepted;
- ``log:REGEX``: a line of its stdout or stderr matches;
- ``cmd:COMMAND``: the command exits with status 0 (run as a step, same environment).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import StoppedError
from perflab.execution.command import StepOutput, run_command
from perflab.hosts.base import Host, output_tail
from perflab.hosts.local import LocalHost
from perflab.hosts.process import ProcessResult
from perflab.hosts.step import StepRequest

#: Seconds between readiness checks.
POLL_S = 0.02
#: Lines of a service's output quoted when it exits before it is ready.
TAIL_LINES = 3
#: Seconds an accepted readiness connection to a service on another host must stay open
#: (neither reset nor closed by a forwarder).
SETTLE_S = 0.2


class ServiceError(StoppedError):
    """A service could not start or did not become ready; one line naming it."""


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port free on ``address`` right now (the kernel's choice of an ephemeral port)."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


@dataclass
class ServiceRun:
    """One start of a service: its thread, its stop request, and what it printed.
    ``request``: its command as a step (`step_name`), with no timeout; the stop request is
    the service's own (`stop`)."""

    name: str
    executor: Host
    request: StepRequest

    def __post_init__(self) -> None:
        self.stop_event = threading.Event()
        self.request = dataclasses.replace(self.request, timeout=None, stop=self.stop_event)
        self.result: StepOutput | None = None
        self._thread = threading.Thread(target=self._run, name=f"service-{self.name}", daemon=True)

    @property
    def step_name(self) -> str:
        return f"service:{self.name}"

    def _run(self) -> None:
        self.result = run_command(self.executor, self.step_name, self.request)
        held = self.process.lingering if self.process is not None else None
        if held is not None:
            # It daemonized: the daemon is held by its perflab-exec, whose parent-death
            # signal follows the thread that started it, so this thread waits with it.
            self.stop_event.wait()
            held.stop()

    def start(
        self,
        ready: str | None,
        timeout: float,
        check: Any = None,
        stop: threading.Event | None = None,
    ) -> None:
        """Starts it and waits until ``ready`` says so (ServiceError, with the service
        stopped, when it exits first or is not ready in ``timeout`` seconds). ``check``
        runs a ``cmd:`` readiness command and returns True when it succeeded. ``stop``, the
        experiment's stop request, ends the wait at once: the service is left to its
        scope's end, and the scope's next step sees the request."""
        for path in self._output:  # a previous start's output is not this one's
            path.unlink(missing_ok=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while True:
            ended = self.ended_before_ready()
            if ended is not None:
                raise ServiceError(f"service '{self.name}' did not start: {ended}")
            if self._ready(ready, check) or (stop is not None and stop.is_set()):
                return
            if time.monotonic() >= deadline:
                self.stop()
                raise ServiceError(
                    f"service '{self.name}' not ready within {timeout:g} s ({ready})",
                    hint="raise ready_timeout, or check its command and readiness",
                )
            time.sleep(POLL_S)

    def ended_before_ready(self) -> str | None:
        """Why it cannot become ready: its command has exited with a failure, or with
        status 0 leaving nothing running (a daemon's parent exiting 0 is fine: the shim
        holds the daemon); None while it may still get ready."""
        result = self.result  # set by its thread once the command has exited
        if result is None:
            return None
        if result.ok and result.process is not None and result.process.lingering is not None:
            return None
        if result.ok:
            what = (
                f"{self.step_name}: exited with status 0 before it was ready, "
                "leaving nothing running"
            )
        elif result.error or result.process is None:
            return result.failure()
        else:
            what = f"{self.step_name}: {result.process.describe_failure()}"
        tail = output_tail(result.stderr, TAIL_LINES) or output_tail(result.stdout, TAIL_LINES)
        return what + (f": {tail}" if tail else " (it printed nothing)")

    def _ready(self, ready: str | None, check: Any) -> bool:
        if ready is None:
            return True
        if ready.startswith("tcp://"):
            host, _, port = ready[6:].rpartition(":")
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            settle = 0.0 if isinstance(self.executor, LocalHost) else SETTLE_S
            return _connects(family, (host.strip("[]"), int(port)), settle)
        if ready.startswith("unix://"):
            return _connects(socket.AF_UNIX, ready[7:], 0.0)
        if ready.startswith("log:"):
            pattern = re.compile(ready[4:], re.MULTILINE)
            return any(pattern.search(_text(path)) for path in self._output)
        if ready.startswith("cmd:"):
            return bool(check(ready[4:]))
        raise ServiceError(f"service '{self.name}': unknown readiness {ready!r}")

    def stop(self) -> StepOutput | None:
        """Stops it (its process group: SIGTERM, grace, SIGKILL; a held daemon likewise) and
        returns what it printed and how it ended."""
        self.stop_event.set()
        self._thread.join()
        return self.result

    @property
    def process(self) -> ProcessResult | None:
        return self.result.process if self.result is not None else None

    @property
    def _output(self) -> tuple[Path, Path]:
        return self.request.stdout_path, self.request.stderr_path


def _connects(family: int, address: Any, settle: float) -> bool:
    """A connection is accepted and stays open for ``settle`` seconds: data (a banner) or
    silence is a listener; end of stream or a reset is a forwarder with nothing behind it."""
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        s.connect(address)
        if settle <= 0:
            return True
        s.settimeout(settle)
        try:
            return s.recv(1, socket.MSG_PEEK) != b""
        except TimeoutError:
            return True
    return False


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
