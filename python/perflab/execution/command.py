"""A shell command as a step of a run: executed by the executor, output kept, measured."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.execution.failure_policy import Failure
from perflab.hosts.base import output_tail
from perflab.hosts.process import ProcessResult
from perflab.hosts.ssh import HostError

if TYPE_CHECKING:
    from perflab.hosts.base import Host
    from perflab.hosts.step import StepRequest

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


def run_command(executor: Host, name: str, request: StepRequest) -> StepOutput:
    """The step called ``name`` run on ``executor``: its output (kept), how it ended, and
    what ran; a command that could not start, or a host lost, is a failed step too."""
    command, added = request.command, added_env(request.env)
    out_path, err_path = request.stdout_path, request.stderr_path
    try:
        result = executor.run(request)
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


def step_status(step: StepOutput) -> str:
    """A failed step's status for its run: interrupted, timeout or failed."""
    if step.process is not None and step.process.interrupted:
        return "interrupted"
    if step.process is not None and step.process.timed_out:
        return "timeout"
    return "failed"


def step_failure(step: StepOutput) -> Failure:
    """How a failed step failed, for the run's reason and the failure policy."""
    kind = step.process.describe_failure() if step.process is not None else "could not start"
    return Failure(step.name, kind, step.failure())


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
