"""A shell command as a step of a run: executed by the executor, output kept, measured."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.hosts.base import output_tail
from perflab.hosts.process import TERM_GRACE_S, ProcessResult
from perflab.hosts.ssh import HostError

if TYPE_CHECKING:
    from perflab.hosts.base import Host

#: Output beyond this is truncated in the store (the head and the tail are kept).
MAX_KEPT_OUTPUT = 8 * 1024 * 1024


@dataclass(frozen=True)
class StepOutput:
    name: str
    process: ProcessResult | None  # None when the command could not be started
    stdout: bytes
    stderr: bytes
    error: str | None = None  # why it could not be started (or its host was lost)
    host: str = ""  # the host it ran on (its executor's name)
    command: str = ""  # the command as run (templates rendered)
    env_added: dict[str, str] = field(default_factory=dict)  # what perflab set beyond its own env

    def record(self) -> dict[str, object]:
        """What ran, as the run's ``commands`` artifact keeps it (one entry per step)."""
        return {
            "step": self.name,
            "host": self.host,
            "command": self.command,
            "env": self.env_added,
            **({"measured_by": self.process.measured_by} if self.process else {}),
        }

    @property
    def ok(self) -> bool:
        return self.process is not None and self.process.ok

    def failure(self) -> str:
        """One line: what went wrong, with the last line of stderr when there is one."""
        if self.error:
            return f"{self.name}: {self.error}"
        what = self.process.describe_failure() if self.process else "did not run"
        tail = output_tail(self.stderr) or output_tail(self.stdout)
        return f"{self.name}: {what}" + (f": {tail}" if tail else "")

    def harness_metrics(self) -> dict[str, float]:
        p = self.process
        if p is None:
            return {}
        metrics = {
            "wall_time": p.wall_s,
            "user_time": p.user_s,
            "system_time": p.system_s,
            "cpu_time": p.user_s + p.system_s,
        }
        if p.max_rss_kib is not None:  # never a zero standing in for "not measured"
            metrics["max_rss"] = float(p.max_rss_kib)
        return metrics


def run_command(
    executor: Host,
    name: str,
    command: str,
    *,
    shell: bool,
    env: Mapping[str, str],
    cwd: Path,
    run_dir: Path,
    timeout: float | None,
    stop: threading.Event | None,
    on_start: Callable[[int], None] | None = None,
    cpus: tuple[int, ...] | None = None,
    kill_grace: float = TERM_GRACE_S,
) -> StepOutput:
    added = added_env(env)
    safe = name.replace("/", "_").replace(" ", "_")
    out_path, err_path = run_dir / f"{safe}.stdout", run_dir / f"{safe}.stderr"
    try:
        result = executor.run(
            command,
            shell=shell,
            env=env,
            cwd=cwd,
            stdout_path=out_path,
            stderr_path=err_path,
            timeout=timeout,
            stop=stop,
            on_start=on_start,
            cpus=cpus,
            kill_grace=kill_grace,
        )
    except (FileNotFoundError, PermissionError, ValueError) as e:
        error = str(e) if str(e) else type(e).__name__
        return StepOutput(
            name, None, b"", b"", error, executor.name, command=command, env_added=added
        )
    except HostError as e:  # the connection was lost: the run fails, the experiment goes on
        return StepOutput(
            name,
            None,
            _read_kept(out_path),
            _read_kept(err_path),
            str(e),
            executor.name,
            command=command,
            env_added=added,
        )
    return StepOutput(
        name,
        result,
        _read_kept(out_path),
        _read_kept(err_path),
        host=executor.name,
        command=command,
        env_added=added,
    )


def added_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that perflab's own environment lacks or holds otherwise
    (the spec's, the variant's and phase's ``env``, ``PERFLAB_*``), sorted by name."""
    return {k: env[k] for k in sorted(env) if os.environ.get(k) != env[k]}


def _read_kept(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size <= MAX_KEPT_OUTPUT:
                return f.read()
            half = MAX_KEPT_OUTPUT // 2
            head = f.read(half)
            f.seek(size - half)
            note = f"\n[... perflab: {size - 2 * half} bytes omitted ...]\n".encode()
            return head + note + f.read()
    except FileNotFoundError:
        return b""
