"""The one model of a machine perflab drives: a `Host`.

A host runs a measured step (`Host.run` of a `perflab.hosts.step.StepRequest`: its own
session, timed, stopped with a grace period, what it leaves held), and answers reads (`Reader`: a file, a folder's names, a
short command's output) without ever raising for what is missing: environment capture,
the system checks and the profilers read every machine through it alike. Implementations:
`perflab.hosts.local.LocalHost` (this machine), `perflab.hosts.remote.RemoteHost` (over
SSH: any CPU architecture with a POSIX shell), `perflab.hosts.powered.PoweredHost` (a
device booted, reset and watched from this machine). Code that only reads asks for the
`Reader` part, so that a tree of files can stand in for a machine in tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from perflab.hosts.process import ProcessResult
from perflab.hosts.step import StepRequest

#: Seconds a version or probe command may take before it is abandoned: a first run of perf
#: on an emulated router (7 MB of code read from its disk, a dozen libraries linked) took
#: over 5 s while the machine running QEMU was busy.
TOOL_TIMEOUT = 15.0


class Queried(NamedTuple):
    """A short command's outcome (`Reader.query`)."""

    status: int  # its exit code
    output: str  # stdout and stderr merged


@runtime_checkable
class Reader(Protocol):
    """What reading a machine needs; each returns None instead of raising."""

    def read_file(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or unreadable."""

    def list_dir(self, path: str) -> list[str] | None:
        """The names in the folder, or None when it is missing or unreadable."""

    def query(self, argv: list[str], timeout: float) -> Queried | None:
        """A short command's exit code and output (stdout and stderr merged), or None when
        it could not run or timed out (``LC_ALL=C``: its texts in English)."""


class Host(Reader, Protocol):
    """A machine steps run on. ``name``: how runs and records name it (this machine's host
    name, or the spec's host name)."""

    name: str

    def run(self, request: StepRequest) -> ProcessResult:
        """Runs one step to its end (or its timeout or stop); its output to the request's
        files."""
        ...

    def stage(self, local: Path) -> str:
        """The path, on this host, of a copy of the local file ``local``."""
        ...

    def fetch(self, path: str, cwd: Path, limit: int) -> bytes:
        """The file ``path`` on this host (relative to where its commands start; ``cwd``
        here); FileNotFoundError when it cannot be read or is over ``limit`` bytes."""
        ...

    def base_env(self) -> dict[str, str]:
        """The environment a step starts from before perflab's additions."""
        ...


def read_text(host: Reader, path: str) -> str | None:
    """The file as text (undecodable bytes replaced), or None when it cannot be read."""
    data = host.read_file(path)
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")


def read_line(host: Reader, path: str) -> str | None:
    """The file's text stripped, or None when it cannot be read or is blank."""
    text = read_text(host, path)
    if text is None:
        return None
    text = text.strip()
    return text or None


def command_output(host: Reader, argv: list[str], timeout: float = TOOL_TIMEOUT) -> str | None:
    """The command's output when it ran and exited 0, else None."""
    result = host.query(argv, timeout)
    if result is None or result.status != 0:
        return None
    return result.output


def output_tail(data: bytes, lines: int = 1) -> str:
    """The last ``lines`` non-blank lines of a command's output, each at most 200
    characters, on one line (`` | `` between): what a one-line failure quotes."""
    kept = [x.strip() for x in data.decode("utf-8", "replace").splitlines() if x.strip()]
    return " | ".join(line[:200] for line in kept[-lines:]) if lines > 0 else ""
