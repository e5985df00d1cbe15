"""The system checks recorded with every experiment: a snapshot at the start and after each
completed block, each an experiment-level artifact ``system/NNN`` holding the checks'
JSON (`perflab.platform.system_state`) and which variants ran since the snapshot before.

A block, here, is what the plan runs together: with ``order = "interleaved"`` one run of
every (cell, variant) — the plan's block; with ``order = "sequential"`` the repetitions of
one (cell, variant), so each snapshot covers one variant and conditions that differed
between variants can be told apart (`perflab.analysis.system_conditions`).

The snapshots are of the experiment's machine, through its executor's `Reader`
(leaving out perflab's own process tree from the busiest processes there), and of every
other host the spec names (`EverySnapshot`): a noisy load machine or a device under test
whose governor changed spoils a comparison as much as the machine perflab runs on. Each
snapshot says which host it is of.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.hosts.local import LocalHost
from perflab.hosts.powered import PoweredHost
from perflab.platform.system_state import read_system_state
from perflab.store.artifact_keys import SNAPSHOT_PREFIX

if TYPE_CHECKING:
    from perflab.hosts.base import Host, Queried, Reader
    from perflab.store import Database, RunRow


class ProcessTable:
    """A remote host's reads for one snapshot, the process table fetched at once.

    On a remote host every read is a round trip, and the busiest-processes check reads
    ``/proc/PID/stat`` of every process, twice: listing ``/proc`` there also fetches every
    process's ``stat`` in the same command (``grep -H``: one line each, after its path), and
    those reads are answered from it until the next listing. Everything else is the host's
    own read."""

    def __init__(self, host: Host):
        self.host = host
        self._stats: dict[str, bytes] = {}

    def read_file(self, path: str) -> bytes | None:
        if path in self._stats:
            return self._stats[path]
        return self.host.read_file(path)

    def query(self, argv: list[str], timeout: float) -> Queried | None:
        return self.host.query(argv, timeout)

    def list_dir(self, path: str) -> list[str] | None:
        if path.rstrip("/") != "/proc":
            return self.host.list_dir(path)
        script = (
            "ls -1A /proc && echo " + _MARK + " && grep -H '' /proc/[0-9]*/stat 2>/dev/null; true"
        )
        result = self.host.query(["sh", "-c", script], 20.0)
        if result is None or result.status != 0 or _MARK not in result.output:
            return None
        listing, _, stats = result.output.partition(_MARK + "\n")
        self._stats = {}
        for line in stats.splitlines():
            where, sep, text = line.partition(":")  # "/proc/PID/stat:..." (a path has no ':')
            if sep and where.startswith("/proc/") and where.endswith("/stat"):
                self._stats[where] = (text + "\n").encode()
        return [line for line in listing.splitlines() if line and line != _MARK]


#: Where the listing of /proc ends and the processes' stat lines begin.
_MARK = "--perflab-proc-stat--"


class SystemSnapshots:
    """Reads and stores one host's snapshots; `due` is told every completed run and the one
    that follows it (None: none planned yet)."""

    def __init__(
        self,
        store: Database,
        eid: int,
        executor: Host,
        order: str,
        *,
        message: Callable[[str], None] | None = None,
        reader: Reader | None = None,
        every: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.every, self.clock = every, clock
        self._last_taken = -math.inf
        self.store = store
        self.eid = eid
        self.host = executor.name
        self.executor = executor
        local = isinstance(executor, LocalHost)
        self.reader: Reader = reader or (executor if local else ProcessTable(executor))
        self.own_pid = os.getpid() if local else None
        self.sequential = order == "sequential"
        self.message = message
        self._since: list[RunRow] = []
        self._failed = False

    def due(self, run: RunRow, following: RunRow | None) -> str | None:
        """Notes a completed run; the label of the snapshot due after it, or None: one is due
        where a block (a variant's runs, sequential) ends, ``every`` seconds or more after
        the one before."""
        self._since.append(run)
        if following is not None and self._segment(following) == self._segment(run):
            return None
        if self.clock() - self._last_taken < self.every:
            return None
        return self._label(run)

    def final_label(self) -> str | None:
        """The label of the last snapshot, None when no run ended since the one before."""
        return self._label(self._since[-1]) if self._since else None

    def _label(self, run: RunRow) -> str:
        if self.sequential:
            return f"after {run.variant}" + (f" · {run.cell_key}" if run.cell_key != "-" else "")
        return f"after block {run.block + 1}"

    def _segment(self, run: RunRow) -> tuple[Any, ...]:
        return (run.cell_key, run.variant) if self.sequential else (run.block,)

    def read(self, label: str) -> dict[str, Any] | None:
        """The snapshot's document (None if the checks could not be read); touches no store,
        so that several hosts' are read at once. A device this machine boots has no state
        while it is down (before its first boot): nothing is read, and its runs so far count
        towards its next snapshot."""
        if isinstance(self.executor, PoweredHost) and not self.executor.up:
            return None
        runs, self._since = self._since, []
        self._last_taken = self.clock()
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
        return doc

    def save(self, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        """``doc`` stored as the experiment's next ``system/NNN`` artifact."""
        if doc is None:
            return None
        index = sum(
            1 for n, _ in self.store.artifact_names(self.eid) if n.startswith(SNAPSHOT_PREFIX)
        )
        self.store.put_artifact(self.eid, f"{SNAPSHOT_PREFIX}{index:03d}", json.dumps(doc).encode())
        return doc


class EverySnapshot:
    """The snapshots of the experiment's executor and of each remote host of the spec,
    taken at the same moments (`SystemSnapshots` each), the hosts' at once: each waits out
    the busiest-processes check's sampling interval, and a remote one its round trips."""

    def __init__(
        self,
        store: Database,
        eid: int,
        executors: list[Host],
        order: str,
        *,
        message: Callable[[str], None] | None = None,
        every: float = 0.0,
    ):
        self.each = [
            SystemSnapshots(store, eid, executor, order, message=message, every=every)
            for executor in executors
        ]

    def start(self) -> None:
        self._take(["start"] * len(self.each))

    def after_run(self, run: RunRow, following: RunRow | None) -> None:
        self._take([s.due(run, following) for s in self.each])

    def finish(self) -> None:
        """Each host's last snapshot (`SystemSnapshots.finish`), read at once."""
        self._take([s.final_label() for s in self.each])

    def _take(self, labels: list[str | None]) -> None:
        """Each host's snapshot that is due, read at once (in threads), stored in order."""
        docs: list[dict[str, Any] | None] = [None] * len(self.each)

        def read(i: int, label: str) -> None:
            docs[i] = self.each[i].read(label)

        threads = [
            threading.Thread(target=read, args=(i, label), daemon=True)
            for i, label in enumerate(labels)
            if label is not None
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s, doc in zip(self.each, docs):
            s.save(doc)
