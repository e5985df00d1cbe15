"""Finding a test's processes by a name unique to it, and waiting for them with a bounded
poll (never a fixed sleep)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def marker_sleep(tmp_path: Path) -> Path:
    """A `sleep` under a name unique to this test, so its processes can be found by name."""
    link = tmp_path / f"marker-sleep-{os.getpid()}-{tmp_path.name}"
    link.symlink_to(
        subprocess.run(
            ["sh", "-c", "command -v sleep"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    return link


def live(marker: Path) -> list[int]:
    """PIDs of live (not zombie) processes whose command line mentions the marker."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.name.encode() in cmd and state != "Z":
            found.append(int(proc.name))
    return found


def gone(marker: Path, timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not live(marker):
            return True
        time.sleep(0.02)
    return False


def wait_until(predicate, timeout: float = 30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def all_gone(pids: list[int], timeout: float = 10.0) -> None:
    """Waits until none of ``pids`` is alive (AssertionError naming those left)."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, [p for p in pids if alive(p)]
        time.sleep(0.02)
