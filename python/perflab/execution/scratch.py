"""The runner's scratch folders and the processes steps leave behind.

A scratch folder (`run_dir` of every run) is named after the perflab process that made it
— PID and kernel start time — so that the next perflab can tell a folder of a killed
perflab (`kill -9`, a crash, a reboot) from one in use, and remove it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from perflab.hosts.process import HeldProcesses, process_start_time

PREFIX = "perflab-run-"


def make_scratch() -> Path:
    start = process_start_time(os.getpid()) or "0"
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{start}-"))


def remove_stale_scratch(root: Path | None = None) -> list[Path]:
    """Remove scratch folders whose perflab is gone; returns them."""
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        parts = path.name[len(PREFIX) :].split("-")
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        pid, start = int(parts[0]), parts[1]
        if process_start_time(pid) == start:
            continue  # its perflab is alive
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def stop_all(held: list[HeldProcesses]) -> list[str]:
    """Stop every held group of leftover processes (emptying the list); what was running."""
    left: list[str] = []
    while held:
        left += held.pop().stop()
    return left
