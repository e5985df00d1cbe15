"""The system checks recorded with every experiment: a snapshot at the start and after each
completed block, each an experiment-level artifact ``system/NNN`` holding the checks'
JSON (`perflab.platform.system_state`) and which variants ran since the snapshot before.

A block, here, is what the plan runs together: with ``order = "interleaved"`` one run of
every (cell, variant) — the plan's block; with ``order = "sequential"`` the repetitions of
one (cell, variant), so each snapshot covers one variant and conditions that differed
between variants can be told apart (`perflab.analysis.system_conditions`).

The snapshots are of this machine, through the executor's `HostAccess`, leaving out
perflab's own process tree from the busiest processes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.analysis.system_conditions import SNAPSHOT_PREFIX
from perflab.platform.system_state import SystemReader, read_system_state
from perflab.run.host_access import LocalHost

if TYPE_CHECKING:
    from perflab.run.executor import Executor
    from perflab.run.host_access import HostAccess
    from perflab.store import RunRow, Store


class HostReader:
    """`SystemReader` over a `HostAccess`: files read through it, folders listed with
    ``ls`` there (directly on this machine)."""

    def __init__(self, host: HostAccess):
        self.host = host

    def read_file(self, path: str) -> bytes | None:
        return self.host.read_file(path)

    def list_dir(self, path: str) -> list[str] | None:
        if isinstance(self.host, LocalHost):
            try:
                return os.listdir(path)
            except (OSError, ValueError):
                return None
        result = self.host.run(["ls", "-1A", "--", path], 10.0)
        if result is None or result[0] != 0:
            return None
        return [line for line in result[1].splitlines() if line]


class SystemSnapshots:
    """Takes and stores the experiment's snapshots; `after_run` is told every completed run
    and the one that follows it (None: none planned yet)."""

    def __init__(
        self,
        store: Store,
        eid: int,
        executor: Executor,
        order: str,
        *,
        message: Callable[[str], None] | None = None,
        reader: SystemReader | None = None,
    ):
        self.store = store
        self.eid = eid
        self.host = executor.host
        self.reader: SystemReader = reader or HostReader(executor.host_access())
        self.own_pid = os.getpid() if isinstance(executor.host_access(), LocalHost) else None
        self.sequential = order == "sequential"
        self.message = message
        self._since: list[RunRow] = []
        self._failed = False

    def start(self) -> None:
        self.take("start")

    def after_run(self, run: RunRow, following: RunRow | None) -> None:
        self._since.append(run)
        if following is not None and self._segment(following) == self._segment(run):
            return
        if self.sequential:
            label = f"after {run.variant}" + (f" · {run.cell_key}" if run.cell_key != "-" else "")
        else:
            label = f"after block {run.block + 1}"
        self.take(label)

    def _segment(self, run: RunRow) -> tuple[Any, ...]:
        return (run.cell_key, run.variant) if self.sequential else (run.block,)

    def take(self, label: str) -> dict[str, Any] | None:
        """Reads the checks and stores them as the next ``system/NNN`` artifact."""
        runs, self._since = self._since, []
        try:
            state = read_system_state(self.reader, own_pid=self.own_pid)
        except Exception as e:  # a snapshot is a record beside the runs: never their end
            if not self._failed and self.message:
                self.message(f"system snapshot failed ({type(e).__name__}: {e}); runs go on")
            self._failed = True
            return None
        doc = {
            **state.to_json(),
            "label": label,
            "host": self.host,
            "at": time.time(),
            "runs": len(runs),
            "last_run": runs[-1].order_index + 1 if runs else None,
            "variants": list(dict.fromkeys(r.variant for r in runs)),
        }
        index = sum(
            1 for n, _ in self.store.artifact_names(self.eid) if n.startswith(SNAPSHOT_PREFIX)
        )
        self.store.put_artifact(self.eid, f"{SNAPSHOT_PREFIX}{index:03d}", json.dumps(doc).encode())
        return doc
