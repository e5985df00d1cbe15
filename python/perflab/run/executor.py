"""Where commands run. The runner talks to this small interface only, so remote
executors (SSH hosts, a cluster) slot in without touching it."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from perflab.run.process import TERM_GRACE_S, ProcessResult, run_process, spawn_argv

if TYPE_CHECKING:
    from perflab.platform import CoreChoice
    from perflab.run.host_access import HostAccess, LocalHost


class Executor(Protocol):
    host: str

    def run(
        self,
        command: str,
        *,
        shell: bool,
        env: Mapping[str, str],
        cwd: Path,
        stdout_path: Path,
        stderr_path: Path,
        timeout: float | None,
        stop: threading.Event | None,
        on_start: Callable[[int], None] | None,
        cpus: tuple[int, ...] | None = None,
        kill_grace: float = TERM_GRACE_S,
    ) -> ProcessResult: ...

    def host_access(self) -> HostAccess: ...

    def stage(self, local: Path) -> str:
        """The path, on this executor's host, of a copy of the local file ``local``."""
        ...

    def fetch(self, path: str, cwd: Path, limit: int) -> bytes:
        """The file ``path`` on this executor's host (relative to where its commands start;
        ``cwd`` here); FileNotFoundError when it cannot be read or is over ``limit`` bytes."""
        ...


class PinningExecutor(Executor, Protocol):
    """An `Executor` that also picks the cores phases are pinned to (this machine's)."""

    def pick_cores(self, n: int) -> CoreChoice: ...


class LocalExecutor:
    """Runs commands on this machine."""

    def __init__(self) -> None:
        self.host = socket.gethostname()

    def run(
        self,
        command: str,
        *,
        shell: bool,
        env: Mapping[str, str],
        cwd: Path,
        stdout_path: Path,
        stderr_path: Path,
        timeout: float | None = None,
        stop: threading.Event | None = None,
        on_start: Callable[[int], None] | None = None,
        cpus: tuple[int, ...] | None = None,
        kill_grace: float = TERM_GRACE_S,
    ) -> ProcessResult:
        return run_process(
            spawn_argv(command, shell),
            env=env,
            cwd=cwd,
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            timeout=timeout,
            stop=stop,
            on_start=on_start,
            cpus=cpus,
            kill_grace=kill_grace,
        )

    def pick_cores(self, n: int) -> CoreChoice:
        """N cores of one type, no two SMT siblings, spread over L2 caches (the router performance-index experiment's rule)."""
        from perflab.platform import pick_cores, read_topology

        return pick_cores(n, read_topology())

    def host_access(self) -> LocalHost:
        from perflab.run.host_access import LocalHost

        return LocalHost()

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
