"""One step for a host to run, as one value: `StepRequest`, what `Host.run` takes whole.

Every way a step is run — a run's command, a service, a load process, a profiler, a boot
command on the controller — fills one request, and passes it down unchanged; a caller
that changes one thing of a request it was given makes a new one with
`dataclasses.replace`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: How long a step's processes get between SIGTERM and SIGKILL (the spec's ``kill_grace``).
TERM_GRACE_S = 2.0


@dataclass(frozen=True)
class StepRequest:
    """A command and how it runs: where it starts, where its output goes, its environment,
    and what ends it.

    command: a shell command (``shell``), or a command line split with shlex and executed
        without a shell.
    cwd: where it starts on this machine (a remote host starts it in its own ``workdir``).
    stdout_path, stderr_path: files on this machine its output ends up in.
    env: its whole environment (a remote host adds it to the login environment there).
    timeout: seconds until it is stopped (None: no limit).
    stop: set to stop it (the experiment's stop request); None: nothing stops it early.
    on_start: called with its pid once it exists (a local step: for crash recovery).
    cpus: CPU affinity of it and everything it starts (None: not pinned).
    kill_grace: seconds between SIGTERM and SIGKILL when it is stopped.
    """

    command: str
    cwd: Path
    stdout_path: Path
    stderr_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    shell: bool = True
    timeout: float | None = None
    stop: threading.Event | None = None
    on_start: Callable[[int], None] | None = None
    cpus: tuple[int, ...] | None = None
    kill_grace: float = TERM_GRACE_S


def output_files(folder: Path, name: str) -> tuple[Path, Path]:
    """Where the output of the step called ``name`` goes in ``folder``: ``NAME.stdout`` and
    ``NAME.stderr``, the name made safe for a file name."""
    safe = name.replace("/", "_").replace(" ", "_")
    return folder / f"{safe}.stdout", folder / f"{safe}.stderr"
