"""This machine as a `perflab.hosts.base.Host`: steps through ``perflab-exec``
(`process.py`), reads straight from its files, short commands in a session of their own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

from perflab.hosts.base import Queried
from perflab.hosts.process import ProcessResult, run_process
from perflab.hosts.step import StepRequest


class LocalHost:
    """The machine perflab runs on."""

    def __init__(self) -> None:
        self.name = socket.gethostname()

    @staticmethod
    def run(request: StepRequest) -> ProcessResult:
        return run_process(request)

    def read_file(self, path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read()
        except (OSError, ValueError):
            return None

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return os.listdir(path)
        except (OSError, ValueError):
            return None

    def query(self, argv: list[str], timeout: float) -> Queried | None:
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
        return Queried(proc.returncode, out.decode("utf-8", errors="replace"))

    @staticmethod
    def stage(local: Path) -> str:
        return str(local)

    @staticmethod
    def fetch(path: str, cwd: Path, limit: int) -> bytes:
        target = cwd / path
        try:
            if target.stat().st_size > limit:
                raise FileNotFoundError(f"{path}: larger than {limit:,} bytes")
            return target.read_bytes()
        except (IsADirectoryError, PermissionError) as e:
            raise FileNotFoundError(f"{path}: {e.strerror}") from None

    @staticmethod
    def base_env() -> dict[str, str]:
        return dict(os.environ)
