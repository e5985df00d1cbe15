"""How environment capture reaches a host: read a file, run a command.

`HostAccess` is all `perflab.run.environment.capture` needs from a host, so the same
code describes a remote host through its own implementation. Nothing here raises for a
missing file, a tool that is not installed or a command that hangs: each returns None.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Protocol, runtime_checkable

#: Seconds a version or probe command may take before it is abandoned.
TOOL_TIMEOUT = 5.0


@runtime_checkable
class HostAccess(Protocol):
    """The two things capture needs from a host; each returns None instead of raising."""

    def read_file(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is missing or unreadable."""

    def run(self, argv: list[str], timeout: float) -> tuple[int, str] | None:
        """(exit code, stdout and stderr merged), or None when it could not run or timed out."""


class LocalHost:
    """`HostAccess` for the machine perflab runs on."""

    name = "localhost"

    def read_file(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except (OSError, ValueError):
            return None

    def run(self, argv: list[str], timeout: float) -> tuple[int, str] | None:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}  # version and lscpu texts in English
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except (OSError, ValueError):
            return None
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out = None
        # A version probe leaves nothing behind: its own group goes, and nothing else.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if out is None:
            proc.communicate()
            return None
        return proc.returncode, out.decode("utf-8", errors="replace")


def read_text(host: HostAccess, path: str) -> str | None:
    """The file as text (undecodable bytes replaced), or None when it cannot be read."""
    data = host.read_file(path)
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")


def read_line(host: HostAccess, path: str) -> str | None:
    """The file's text stripped, or None when it cannot be read or is blank."""
    text = read_text(host, path)
    if text is None:
        return None
    text = text.strip()
    return text or None


def command_output(host: HostAccess, argv: list[str], timeout: float = TOOL_TIMEOUT) -> str | None:
    """The command's output when it ran and exited 0, else None."""
    result = host.run(argv, timeout)
    if result is None or result[0] != 0:
        return None
    return result[1]
