"""The results store: a SQLite file (WAL) or a PostgreSQL database, every finished run
committed before the next.

Runs are planned up front (status ``pending``), so resuming is "execute the pending
runs in order": nothing finished is lost or repeated.

Opening checks the location and schema first (see connect.py, postgres_backend.py):
reading commands open with ``write=False`` and create or change nothing. Every method turns
database errors into a one-line StoreError naming the store and what failed (see
faults.py); a failed write is rolled back whole, so the runs committed before it stay
intact. Query results are read by column name (rows.py maps them to values), never by
position. The SQL here is the one both kinds of store speak; what differs between them is
behind `dialect.Backend`.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import StoreError
from perflab.records import FINISHED, ExperimentRow, MetricDef, NewRun, Position, RunRow
from perflab.store.faults import reads, writes
from perflab.store.hot_reads import HotReads
from perflab.store.location import StoreURL, store_location
from perflab.store.rows import experiment_row, metric_def, run_row

if TYPE_CHECKING:
    from perflab.store.dialect import Backend, Holder

#: The experiment-level artifact that says why an experiment is ``stopped``.
STOP_REASON = "stop_reason"


class Database(HotReads):
    """The store at ``path``: a SQLite file, or a PostgreSQL database by its URL
    (``postgresql://USER@HOST:PORT/DB``); default $PERFLAB_STORE, else ./perflab.db.

    write=False: for reading commands; a missing store is a StoreError and nothing is
    created or changed. write=True: the store (and its folder, or its tables in an empty
    PostgreSQL database) is created unless ``create=False`` (e.g. resuming, which needs an
    existing store); an older store is migrated.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, write: bool = True, create: bool = True
    ):
        self.path = store_location(path)  # a Path, or a StoreURL (printed without its password)
        self.backend = _open(self.path, write=write, create=create)
        self.db = self.backend.db

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[None]:
        return self.backend.transaction()

    def run_label(self, run_id: int) -> str:
        """``run N of experiment E`` (N as `perflab show --run` counts), best effort: for messages."""
        try:
            row = self.db.execute(
                "SELECT experiment_id, order_index FROM runs WHERE id=?", (run_id,)
            ).fetchone()
        except self.backend.errors:
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
        position: Position | None = None,
    ) -> int:
        """A new experiment with its metrics and runs; ``position``: its version and the
        source it was built from (`perflab history`)."""
        now = time.time()
        at = position or Position()
        with self.transaction():
            eid = self.backend.insert(
                "INSERT INTO experiments (name, description, source, spec_path, spec_text, spec_sha256,"
                " baseline, settings, status, created_at, user_name, controller_host,"
                " version, source_commit, source_repo) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
                    *_who(),
                    at.version,
                    at.commit,
                    at.repo,
                ),
            )
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
            " warmup, status, reason, started_at, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
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
                    r.reason,
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
            row = self.db.execute(
                "SELECT settings FROM experiments WHERE id=?" + self.backend.for_update, (eid,)
            ).fetchone()
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
            " ORDER BY experiment_id, status"
        ).fetchall():
            counts.setdefault(row["experiment_id"], {})[row["status"]] = row["n"]
        for row in self.db.execute("SELECT * FROM experiments ORDER BY id DESC").fetchall():
            e = experiment_row(row)
            out.append((e, counts.get(e.id, {})))
        return out

    @reads
    def runner_alive(self, eid: int) -> bool | None:  # None: it cannot be told from here
        return self.backend.runner_alive(eid)

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
    def claim(self, eid: int, pid: int, host: str) -> Holder | None:
        """Take the experiment's runner lock; returns the holder when another live process has it."""
        return self.backend.claim(eid, pid, host)

    @writes("unlock experiment {eid}")
    def release(self, eid: int) -> None:
        self.backend.release(eid)

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
    def start_run(self, run_id: int, host: str, device: str | None = None) -> None:
        """The run starts on ``host`` (this machine's name), on a pool's ``device``."""
        self.db.execute(
            "UPDATE runs SET status='running', started_at=?, ended_at=NULL, host=?,"
            " attempts=attempts+1, pid=NULL, pid_start=NULL, device=? WHERE id=?",
            (time.time(), host, device, run_id),
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
        """Put an interrupted run back to pending (its partial artifacts and values are
        dropped: a run a pool's failed device left is run again on another)."""
        with self.transaction():
            self.db.execute("DELETE FROM artifacts WHERE run_id=?", (run_id,))
            self.db.execute("DELETE FROM metrics WHERE run_id=?", (run_id,))
            self.db.execute(
                "UPDATE runs SET status='pending', reason=NULL, started_at=NULL, ended_at=NULL,"
                " pid=NULL, pid_start=NULL, device=NULL WHERE id=?",
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
            "SELECT status, count(*) AS n FROM runs WHERE experiment_id=? GROUP BY status"
            " ORDER BY status",
            (eid,),
        ).fetchall()
        return {r["status"]: r["n"] for r in rows}

    @reads
    def metrics(self, eid: int) -> Iterator[tuple[int, str, float]]:
        """(run_id, metric name, value) for every run of the experiment, in run order and by
        name within a run (SQLite's order without the ORDER BY: what every store gives)."""
        rows = self.db.execute(
            "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE r.experiment_id=? ORDER BY r.order_index, m.name",
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
                "INSERT INTO environment (experiment_id, host, captured_at, info) VALUES (?,?,?,?)"
                " ON CONFLICT (experiment_id, host) DO UPDATE"
                " SET captured_at=excluded.captured_at, info=excluded.info",
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
            "AND substr(name, 1, CAST(? AS INTEGER))=? ORDER BY id",
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


def _open(where: Path | StoreURL, *, write: bool, create: bool) -> Backend:
    """The store at ``where`` opened by the backend of its kind; its schema checked (and
    made or migrated when ``write``; made only when ``create`` too)."""
    if isinstance(where, StoreURL):
        from perflab.store.postgres_backend import PostgresBackend

        return PostgresBackend(where, write=write, create=create)
    from perflab.store.sqlite_backend import SqliteBackend

    return SqliteBackend(where, write=write, create=create)


def _who() -> tuple[str | None, str]:
    """(user, host) of this process: who ran an experiment, from which controller — as
    labgrid names a place's holder (``LG_USERNAME``, ``LG_HOSTNAME``) when they are set, so
    that a lab's records and its coordinator's say the same names; else the login name and
    the machine's host name."""
    import getpass
    import os
    import socket

    user: str | None = os.environ.get("LG_USERNAME") or None
    if user is None:
        try:
            user = getpass.getuser()
        except (OSError, KeyError):  # no login name in the environment nor in the password file
            user = None
    return user, os.environ.get("LG_HOSTNAME") or socket.gethostname()
