"""The results store: one SQLite file (WAL), every finished run committed before the next.

Runs are planned up front (status ``pending``), so resuming is "execute the pending
runs in order": nothing finished is lost or repeated.

Opening checks the path and schema first (see connect.py): reading commands open with
``write=False`` and create or change nothing. Every method turns SQLite errors into a
one-line StoreError naming the store and what failed (see faults.py); a failed write is
rolled back whole, so the runs committed before it stay intact. Query results are read by
column name (rows.py maps them to values), never by position.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from perflab.errors import StoreError
from perflab.store.connect import connect
from perflab.store.faults import reads, writes
from perflab.store.hot_reads import HotReads
from perflab.store.paths import default_store_path
from perflab.store.rows import (
    FINISHED,
    ExperimentRow,
    MetricDef,
    NewRun,
    RunRow,
    experiment_row,
    metric_def,
    run_row,
)

#: The experiment-level artifact that says why an experiment is ``stopped``.
STOP_REASON = "stop_reason"


class Store(HotReads):
    """The store at ``path`` (default: $PERFLAB_STORE or ./perflab.db).

    write=False: for reading commands; a missing store is a StoreError and nothing is
    created or changed. write=True: the store (and its folder) is created unless
    ``create=False`` (e.g. resuming, which needs an existing store).
    """

    def __init__(self, path: str | Path | None = None, *, write: bool = True, create: bool = True):
        self.path = Path(path) if path is not None else default_store_path()
        self.db, self.uri = connect(self.path, write=write, create=create)
        self.db.row_factory = sqlite3.Row  # results are read by column name

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> _Transaction:
        return _Transaction(self.db)

    def run_label(self, run_id: int) -> str:
        """``run N of experiment E`` (N as `perflab show --run` counts), best effort: for messages."""
        try:
            row = self.db.execute(
                "SELECT experiment_id, order_index FROM runs WHERE id=?", (run_id,)
            ).fetchone()
        except sqlite3.Error:
            row = None
        if row is None:
            return f"run id {run_id}"
        return f"run {row['order_index'] + 1} of experiment {row['experiment_id']}"

    # -- experiments
    @writes("save experiment {name!r}")
    def create_experiment(
        self,
        *,
        name: str,
        description: str,
        source: str,
        baseline: str,
        metrics: Sequence[MetricDef],
        settings: dict[str, Any],
        runs: Iterable[NewRun],
        spec_path: str | None = None,
        spec_text: str | None = None,
        spec_sha256: str | None = None,
        status: str = "running",
    ) -> int:
        now = time.time()
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO experiments (name, description, source, spec_path, spec_text, spec_sha256,"
                " baseline, settings, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    name,
                    description,
                    source,
                    spec_path,
                    spec_text,
                    spec_sha256,
                    baseline,
                    json.dumps(settings),
                    status,
                    now,
                ),
            )
            eid = cur.lastrowid
            assert eid is not None  # set by the INSERT just executed
            self.db.executemany(
                "INSERT INTO metric_defs (experiment_id, position, name, unit, better) VALUES (?,?,?,?,?)",
                [(eid, i, m.name, m.unit, m.better) for i, m in enumerate(metrics)],
            )
            self._insert_runs(eid, runs, now)
            if status == "complete":
                self.db.execute("UPDATE experiments SET finished_at=? WHERE id=?", (now, eid))
        return eid

    def _insert_runs(self, eid: int, runs: Iterable[NewRun], now: float) -> None:
        runs = list(runs)
        self.db.executemany(
            "INSERT INTO runs (experiment_id, order_index, block, cell_key, cell, variant, repetition,"
            " warmup, status, started_at, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    eid,
                    r.order_index,
                    r.block,
                    r.cell_key,
                    json.dumps(r.cell),
                    r.variant,
                    r.repetition,
                    int(r.warmup),
                    r.status,
                    *((now, now) if r.status in FINISHED else (None, None)),
                )
                for r in runs
            ],
        )
        if any(r.metrics for r in runs):
            ids = {
                row["order_index"]: row["id"]
                for row in self.db.execute(
                    "SELECT order_index, id FROM runs WHERE experiment_id=?", (eid,)
                )
            }
            self.db.executemany(
                "INSERT INTO metrics (run_id, name, value) VALUES (?,?,?)",
                [
                    (ids[r.order_index], k, float(v))
                    for r in runs
                    if r.metrics
                    for k, v in r.metrics.items()
                ],
            )

    @writes("plan more runs of experiment {eid}")
    def append_runs(self, eid: int, runs: Iterable[NewRun]) -> None:
        """Plan more runs (an adaptive design's next block), after the existing ones."""
        with self.transaction():
            self._insert_runs(eid, runs, time.time())

    @writes("update the settings of experiment {eid}")
    def update_settings(self, eid: int, **changes: Any) -> None:
        """Merge top-level keys into the experiment's stored settings (e.g. the adaptive record)."""
        with self.transaction():
            row = self.db.execute("SELECT settings FROM experiments WHERE id=?", (eid,)).fetchone()
            settings = json.loads(row["settings"])
            settings.update(changes)
            self.db.execute(
                "UPDATE experiments SET settings=? WHERE id=?", (json.dumps(settings), eid)
            )

    @reads
    def experiment(self, ref: str | int) -> ExperimentRow:
        """An experiment by id, by name (its latest), or ``last``."""
        ref_s = str(ref).strip()
        if ref_s in ("last", "latest"):
            row = self.db.execute("SELECT * FROM experiments ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"the store {self.path} holds no experiments yet")
        elif ref_s.lstrip("#").isdigit():
            row = self.db.execute(
                "SELECT * FROM experiments WHERE id=?", (int(ref_s.lstrip("#")),)
            ).fetchone()
        else:
            row = self.db.execute(
                "SELECT * FROM experiments WHERE name=? ORDER BY id DESC LIMIT 1", (ref_s,)
            ).fetchone()
        if row is None:
            raise StoreError(f"no experiment '{ref_s}' in {self.path}", hint="see `perflab ls`")
        return experiment_row(row)

    @reads
    def experiments(self) -> list[tuple[ExperimentRow, dict[str, int]]]:
        """All experiments, newest first, with run counts by status."""
        out = []
        counts: dict[int, dict[str, int]] = {}
        for row in self.db.execute(
            "SELECT experiment_id, status, count(*) AS n FROM runs GROUP BY experiment_id, status"
        ).fetchall():
            counts.setdefault(row["experiment_id"], {})[row["status"]] = row["n"]
        for row in self.db.execute("SELECT * FROM experiments ORDER BY id DESC").fetchall():
            e = experiment_row(row)
            out.append((e, counts.get(e.id, {})))
        return out

    @reads
    def resumable(self, spec_sha256: str) -> ExperimentRow | None:
        """The latest unfinished experiment run from exactly this spec text."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE spec_sha256=? AND source='run' AND status != 'complete'"
            " ORDER BY id DESC LIMIT 1",
            (spec_sha256,),
        ).fetchone()
        return experiment_row(row) if row else None

    @writes("mark experiment {eid} {status}")
    def set_status(self, eid: int, status: str) -> None:
        finished = time.time() if status in ("complete", "aborted") else None
        self.db.execute(
            "UPDATE experiments SET status=?, finished_at=? WHERE id=?", (status, finished, eid)
        )

    @writes("mark experiment {eid} stopped")
    def stop_experiment(self, eid: int, reason: str) -> None:
        """The experiment was stopped by an error before its end (a host unreachable,
        before_all failing): status ``stopped``, ``reason`` kept as its experiment-level
        artifact `STOP_REASON` (read back by `stop_reason`); it can be resumed."""
        with self.transaction():
            self.db.execute(
                "UPDATE experiments SET status='stopped', finished_at=NULL WHERE id=?", (eid,)
            )
            self.db.execute(
                "DELETE FROM artifacts WHERE experiment_id=? AND run_id IS NULL AND name=?",
                (eid, STOP_REASON),
            )
            self._put_artifacts(eid, None, None, {STOP_REASON: reason.encode()})

    def stop_reason(self, eid: int) -> str | None:
        """Why a ``stopped`` experiment stopped (`stop_experiment`), or None."""
        data = self.artifact(eid, STOP_REASON)
        return None if data is None else data.decode("utf-8", "replace")

    @writes("lock experiment {eid} for this runner")
    def claim(self, eid: int, pid: int, host: str) -> tuple[int, str] | None:
        """Take the experiment's runner lock; returns the holder when another live process has it."""
        with self.transaction():
            row = self.db.execute(
                "SELECT runner_pid, runner_host FROM experiments WHERE id=?", (eid,)
            ).fetchone()
            holder_pid, holder_host = row["runner_pid"], row["runner_host"]
            if holder_pid and holder_pid != pid and holder_host == host and _alive(holder_pid):
                return holder_pid, holder_host
            self.db.execute(
                "UPDATE experiments SET runner_pid=?, runner_host=? WHERE id=?", (pid, host, eid)
            )
        return None

    @writes("unlock experiment {eid}")
    def release(self, eid: int) -> None:
        self.db.execute("UPDATE experiments SET runner_pid=NULL WHERE id=?", (eid,))

    @reads
    def metric_defs(self, eid: int) -> list[MetricDef]:
        return [
            metric_def(r)
            for r in self.db.execute(
                "SELECT name, unit, better FROM metric_defs WHERE experiment_id=? ORDER BY position",
                (eid,),
            )
        ]

    # -- runs
    @reads
    def runs(self, eid: int, statuses: Sequence[str] | None = None) -> list[RunRow]:
        sql = "SELECT * FROM runs WHERE experiment_id=?"
        args: list[Any] = [eid]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args.extend(statuses)
        return [run_row(r) for r in self.db.execute(sql + " ORDER BY order_index", args).fetchall()]

    @writes("start {run}")
    def start_run(self, run_id: int, host: str) -> None:
        self.db.execute(
            "UPDATE runs SET status='running', started_at=?, ended_at=NULL, host=?,"
            " attempts=attempts+1, pid=NULL, pid_start=NULL WHERE id=?",
            (time.time(), host, run_id),
        )

    @writes("record the process of {run}")
    def set_run_process(self, run_id: int, pid: int | None, pid_start: str | None) -> None:
        self.db.execute("UPDATE runs SET pid=?, pid_start=? WHERE id=?", (pid, pid_start, run_id))

    @writes("save {run}")
    def finish_run(
        self,
        run_id: int,
        status: str,
        reason: str | None,
        metrics: dict[str, float],
        artifacts: dict[str, bytes],
        experiment_id: int,
        host: str,
    ) -> None:
        """Record a finished run, its metrics and artifacts in one transaction."""
        assert status in FINISHED, status
        with self.transaction():
            self.db.execute(
                "UPDATE runs SET status=?, reason=?, ended_at=?, pid=NULL, pid_start=NULL"
                " WHERE id=?",
                (status, reason, time.time(), run_id),
            )
            self.db.execute("DELETE FROM metrics WHERE run_id=?", (run_id,))
            self.db.executemany(
                "INSERT INTO metrics (run_id, name, value) VALUES (?,?,?)",
                [(run_id, k, float(v)) for k, v in metrics.items()],
            )
            self._put_artifacts(experiment_id, run_id, host, artifacts)

    @writes("reset {run} to pending")
    def reset_run(self, run_id: int) -> None:
        """Put an interrupted run back to pending (its partial artifacts are dropped)."""
        with self.transaction():
            self.db.execute("DELETE FROM artifacts WHERE run_id=?", (run_id,))
            self.db.execute(
                "UPDATE runs SET status='pending', started_at=NULL, ended_at=NULL, pid=NULL,"
                " pid_start=NULL WHERE id=?",
                (run_id,),
            )

    @writes("mark {run} failed")
    def mark_run_failed(self, run_id: int, reason: str) -> None:
        """Record that a run failed without its results (e.g. saving them failed: disk full).

        One small statement, no metrics or artifacts, so it may still fit where the run's
        results did not; raises StoreError if it too cannot be written.
        """
        self.db.execute(
            "UPDATE runs SET status='failed', reason=?, ended_at=?, pid=NULL, pid_start=NULL"
            " WHERE id=?",
            (reason, time.time(), run_id),
        )

    @reads
    def status_counts(self, eid: int) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, count(*) AS n FROM runs WHERE experiment_id=? GROUP BY status", (eid,)
        ).fetchall()
        return {r["status"]: r["n"] for r in rows}

    @reads
    def metrics(self, eid: int) -> Iterator[tuple[int, str, float]]:
        """(run_id, metric name, value) for every run of the experiment."""
        rows = self.db.execute(
            "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE r.experiment_id=?",
            (eid,),
        ).fetchall()
        return iter([(r["run_id"], r["name"], r["value"]) for r in rows])

    # -- environment and artifacts
    @writes("save the environment of experiment {eid} on {host}")
    def put_environment(
        self, eid: int, host: str, info: dict[str, Any], artifacts: dict[str, bytes]
    ) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO environment (experiment_id, host, captured_at, info)"
                " VALUES (?,?,?,?)",
                (eid, host, time.time(), json.dumps(info, default=str)),
            )
            self.db.execute(
                "DELETE FROM artifacts WHERE experiment_id=? AND run_id IS NULL AND host=?",
                (eid, host),
            )
            self._put_artifacts(eid, None, host, artifacts)

    @reads
    def environments(self, eid: int) -> dict[str, dict[str, Any]]:
        return {
            r["host"]: json.loads(r["info"])
            for r in self.db.execute(
                "SELECT host, info FROM environment WHERE experiment_id=? ORDER BY host", (eid,)
            )
        }

    @writes("save artifact {name} of experiment {eid}")
    def put_artifact(self, eid: int, name: str, data: bytes) -> None:
        """An experiment-level artifact (no run, no host), e.g. a system snapshot."""
        with self.transaction():
            self._put_artifacts(eid, None, None, {name: data})

    def _put_artifacts(
        self, eid: int, run_id: int | None, host: str | None, artifacts: dict[str, bytes]
    ) -> None:
        self.db.executemany(
            "INSERT INTO artifacts (experiment_id, run_id, host, name, size, data) VALUES (?,?,?,?,?,?)",
            [
                (eid, run_id, host, name, len(data), zlib.compress(data, 6))
                for name, data in artifacts.items()
            ],
        )

    @reads
    def artifact_names(self, eid: int, run_id: int | None = None) -> list[tuple[str, int]]:
        cond = "run_id IS NULL" if run_id is None else "run_id=?"
        args = (eid,) if run_id is None else (eid, run_id)
        return [
            (r["name"], r["size"])
            for r in self.db.execute(
                f"SELECT name, size FROM artifacts WHERE experiment_id=? AND {cond} ORDER BY id",
                args,
            )
        ]

    @reads
    def runs_with_artifact(self, eid: int, prefix: str) -> dict[int, list[str]]:
        """run id → the names of its artifacts that start with ``prefix``, in one query
        (runs without one are absent)."""
        out: dict[int, list[str]] = {}
        for r in self.db.execute(
            "SELECT run_id, name FROM artifacts WHERE experiment_id=? AND run_id IS NOT NULL "
            "AND substr(name, 1, ?)=? ORDER BY id",
            (eid, len(prefix), prefix),
        ):
            out.setdefault(r["run_id"], []).append(r["name"])
        return out

    @reads
    def artifact(self, eid: int, name: str, run_id: int | None = None) -> bytes | None:
        cond = "run_id IS NULL" if run_id is None else "run_id=?"
        args = (eid, name) if run_id is None else (eid, name, run_id)
        row = self.db.execute(
            f"SELECT data FROM artifacts WHERE experiment_id=? AND name=? AND {cond}"
            " ORDER BY id DESC LIMIT 1",
            args,
        ).fetchone()
        return zlib.decompress(row["data"]) if row else None


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back whole if anything (the COMMIT included) fails.

    SQLite may already have rolled back after a full disk or I/O error; then there is
    nothing to undo, and the original error is the one raised.
    """

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except BaseException:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised says what failed; SQLite undoes it on close regardless


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
