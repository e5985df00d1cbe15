"""The results store: one SQLite file (WAL), every finished run committed before the next.

Runs are planned up front (status ``pending``), so resuming is "execute the pending
runs in order": nothing finished is lost or repeated.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from perflab.errors import StoreError
from perflab.store.schema import DDL, SCHEMA_VERSION

DEFAULT_STORE = "perflab.db"
FINISHED = ("ok", "failed", "timeout")


def default_store_path() -> Path:
    return Path(os.environ.get("PERFLAB_STORE") or DEFAULT_STORE)


@dataclass(frozen=True)
class ExperimentRow:
    id: int
    name: str
    description: str
    source: str
    spec_path: str | None
    spec_text: str | None
    spec_sha256: str | None
    baseline: str
    settings: dict
    status: str
    created_at: float
    finished_at: float | None
    runner_pid: int | None
    runner_host: str | None


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    better: str


@dataclass(frozen=True)
class RunRow:
    id: int
    order_index: int
    block: int
    cell_key: str
    cell: dict
    variant: str
    repetition: int
    warmup: bool
    status: str
    reason: str | None
    attempts: int
    host: str | None
    started_at: float | None
    ended_at: float | None
    pid: int | None
    pid_start: str | None


@dataclass(frozen=True)
class NewRun:
    """A run to insert: planned (status pending) or already finished (import)."""

    order_index: int
    block: int
    cell_key: str
    cell: dict
    variant: str
    repetition: int
    warmup: bool = False
    status: str = "pending"
    metrics: dict[str, float] | None = None


class Store:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_store_path()
        if self.path.is_dir():
            raise StoreError(f"store path is a directory: {self.path}")
        if self.path.exists():
            with open(self.path, "rb") as f:
                head = f.read(16)
            if head and head != b"SQLite format 3\x00":
                raise StoreError(f"not a perflab store (not an SQLite file): {self.path}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open store {self.path}: {e}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _migrate(self) -> None:
        self.db.executescript(DDL)
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) > SCHEMA_VERSION:
            raise StoreError(f"store {self.path} has schema {row[0]}, newer than this perflab "
                             f"({SCHEMA_VERSION}); upgrade perflab")

    def transaction(self):
        return _Transaction(self.db)

    # -- experiments
    def create_experiment(self, *, name: str, description: str, source: str, baseline: str,
                          metrics: Sequence[MetricDef], settings: dict, runs: Iterable[NewRun],
                          spec_path: str | None = None, spec_text: str | None = None,
                          spec_sha256: str | None = None, status: str = "running") -> int:
        now = time.time()
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO experiments (name, description, source, spec_path, spec_text, spec_sha256,"
                " baseline, settings, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (name, description, source, spec_path, spec_text, spec_sha256, baseline,
                 json.dumps(settings), status, now))
            eid = int(cur.lastrowid)
            self.db.executemany(
                "INSERT INTO metric_defs VALUES (?,?,?,?,?)",
                [(eid, i, m.name, m.unit, m.better) for i, m in enumerate(metrics)])
            self._insert_runs(eid, runs, now)
            if status == "complete":
                self.db.execute("UPDATE experiments SET finished_at=? WHERE id=?", (now, eid))
        return eid

    def _insert_runs(self, eid: int, runs: Iterable[NewRun], now: float) -> None:
        runs = list(runs)
        self.db.executemany(
            "INSERT INTO runs (experiment_id, order_index, block, cell_key, cell, variant, repetition,"
            " warmup, status, started_at, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(eid, r.order_index, r.block, r.cell_key, json.dumps(r.cell), r.variant, r.repetition,
              int(r.warmup), r.status, *((now, now) if r.status in FINISHED else (None, None)))
             for r in runs])
        if any(r.metrics for r in runs):
            ids = dict(self.db.execute("SELECT order_index, id FROM runs WHERE experiment_id=?", (eid,)))
            self.db.executemany("INSERT INTO metrics VALUES (?,?,?)",
                                [(ids[r.order_index], k, float(v)) for r in runs if r.metrics
                                 for k, v in r.metrics.items()])

    def append_runs(self, eid: int, runs: Iterable[NewRun]) -> None:
        """Plan more runs (an adaptive design's next block), after the existing ones."""
        with self.transaction():
            self._insert_runs(eid, runs, time.time())

    def update_settings(self, eid: int, **changes: Any) -> None:
        """Merge top-level keys into the experiment's stored settings (e.g. the adaptive record)."""
        with self.transaction():
            (text,) = self.db.execute("SELECT settings FROM experiments WHERE id=?", (eid,)).fetchone()
            settings = json.loads(text)
            settings.update(changes)
            self.db.execute("UPDATE experiments SET settings=? WHERE id=?", (json.dumps(settings), eid))

    def experiment(self, ref: str | int) -> ExperimentRow:
        """An experiment by id, by name (its latest), or ``last``."""
        ref_s = str(ref).strip()
        if ref_s in ("last", "latest"):
            row = self.db.execute("SELECT * FROM experiments ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"the store {self.path} holds no experiments yet")
        elif ref_s.lstrip("#").isdigit():
            row = self.db.execute("SELECT * FROM experiments WHERE id=?", (int(ref_s.lstrip("#")),)).fetchone()
        else:
            row = self.db.execute("SELECT * FROM experiments WHERE name=? ORDER BY id DESC LIMIT 1",
                                  (ref_s,)).fetchone()
        if row is None:
            raise StoreError(f"no experiment '{ref_s}' in {self.path}", hint="see `perflab ls`")
        return _experiment(row)

    def experiments(self) -> list[tuple[ExperimentRow, dict[str, int]]]:
        """All experiments, newest first, with run counts by status."""
        out = []
        counts: dict[int, dict[str, int]] = {}
        for eid, status, n in self.db.execute(
                "SELECT experiment_id, status, count(*) FROM runs GROUP BY experiment_id, status"):
            counts.setdefault(eid, {})[status] = n
        for row in self.db.execute("SELECT * FROM experiments ORDER BY id DESC"):
            e = _experiment(row)
            out.append((e, counts.get(e.id, {})))
        return out

    def resumable(self, spec_sha256: str) -> ExperimentRow | None:
        """The latest unfinished experiment run from exactly this spec text."""
        row = self.db.execute(
            "SELECT * FROM experiments WHERE spec_sha256=? AND source='run' AND status != 'complete'"
            " ORDER BY id DESC LIMIT 1", (spec_sha256,)).fetchone()
        return _experiment(row) if row else None

    def set_status(self, eid: int, status: str) -> None:
        finished = time.time() if status in ("complete", "aborted") else None
        self.db.execute("UPDATE experiments SET status=?, finished_at=? WHERE id=?", (status, finished, eid))

    def claim(self, eid: int, pid: int, host: str) -> tuple[int, str] | None:
        """Take the experiment's runner lock; returns the holder when another live process has it."""
        with self.transaction():
            row = self.db.execute("SELECT runner_pid, runner_host FROM experiments WHERE id=?",
                                  (eid,)).fetchone()
            holder_pid, holder_host = row
            if holder_pid and holder_pid != pid and holder_host == host and _alive(holder_pid):
                return holder_pid, holder_host
            self.db.execute("UPDATE experiments SET runner_pid=?, runner_host=? WHERE id=?", (pid, host, eid))
        return None

    def release(self, eid: int) -> None:
        self.db.execute("UPDATE experiments SET runner_pid=NULL WHERE id=?", (eid,))

    def metric_defs(self, eid: int) -> list[MetricDef]:
        return [MetricDef(*r) for r in self.db.execute(
            "SELECT name, unit, better FROM metric_defs WHERE experiment_id=? ORDER BY position", (eid,))]

    # -- runs
    def runs(self, eid: int, statuses: Sequence[str] | None = None) -> list[RunRow]:
        sql = "SELECT * FROM runs WHERE experiment_id=?"
        args: list[Any] = [eid]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args.extend(statuses)
        return [_run(r) for r in self.db.execute(sql + " ORDER BY order_index", args)]

    def start_run(self, run_id: int, host: str) -> None:
        self.db.execute("UPDATE runs SET status='running', started_at=?, ended_at=NULL, host=?,"
                        " attempts=attempts+1, pid=NULL, pid_start=NULL WHERE id=?",
                        (time.time(), host, run_id))

    def set_run_process(self, run_id: int, pid: int | None, pid_start: str | None) -> None:
        self.db.execute("UPDATE runs SET pid=?, pid_start=? WHERE id=?", (pid, pid_start, run_id))

    def finish_run(self, run_id: int, status: str, reason: str | None, metrics: dict[str, float],
                   artifacts: dict[str, bytes], experiment_id: int, host: str) -> None:
        """Record a finished run, its metrics and artifacts in one transaction."""
        assert status in FINISHED, status
        with self.transaction():
            self.db.execute("UPDATE runs SET status=?, reason=?, ended_at=?, pid=NULL, pid_start=NULL"
                            " WHERE id=?", (status, reason, time.time(), run_id))
            self.db.execute("DELETE FROM metrics WHERE run_id=?", (run_id,))
            self.db.executemany("INSERT INTO metrics VALUES (?,?,?)",
                                [(run_id, k, float(v)) for k, v in metrics.items()])
            self._put_artifacts(experiment_id, run_id, host, artifacts)

    def reset_run(self, run_id: int) -> None:
        """Put an interrupted run back to pending (its partial artifacts are dropped)."""
        with self.transaction():
            self.db.execute("DELETE FROM artifacts WHERE run_id=?", (run_id,))
            self.db.execute("UPDATE runs SET status='pending', started_at=NULL, ended_at=NULL, pid=NULL,"
                            " pid_start=NULL WHERE id=?", (run_id,))

    def measured_values(self, eid: int) -> Iterator[tuple[str, str, int, str, float]]:
        """(cell_key, variant, block, metric, value) of successful non-warm-up runs, in run order."""
        return self.db.execute(
            "SELECT r.cell_key, r.variant, r.block, m.name, m.value FROM runs r"
            " JOIN metrics m ON m.run_id = r.id"
            " WHERE r.experiment_id=? AND r.status='ok' AND r.warmup=0 ORDER BY r.order_index", (eid,))

    def status_counts(self, eid: int) -> dict[str, int]:
        return dict(self.db.execute(
            "SELECT status, count(*) FROM runs WHERE experiment_id=? GROUP BY status", (eid,)).fetchall())

    def cells_and_variants(self, eid: int) -> list[tuple[str, dict, str]]:
        """Distinct (cell_key, labels, variant) in order of first appearance."""
        rows = self.db.execute(
            "SELECT cell_key, cell, variant FROM runs WHERE experiment_id=?"
            " GROUP BY cell_key, variant ORDER BY min(order_index)", (eid,)).fetchall()
        return [(k, json.loads(c), v) for k, c, v in rows]

    def metrics(self, eid: int) -> Iterator[tuple[int, str, float]]:
        """(run_id, metric name, value) for every run of the experiment."""
        return self.db.execute(
            "SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE r.experiment_id=?", (eid,))

    # -- environment and artifacts
    def put_environment(self, eid: int, host: str, info: dict, artifacts: dict[str, bytes]) -> None:
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO environment VALUES (?,?,?,?)",
                            (eid, host, time.time(), json.dumps(info, default=str)))
            self.db.execute("DELETE FROM artifacts WHERE experiment_id=? AND run_id IS NULL AND host=?",
                            (eid, host))
            self._put_artifacts(eid, None, host, artifacts)

    def environments(self, eid: int) -> dict[str, dict]:
        return {h: json.loads(info) for h, info in self.db.execute(
            "SELECT host, info FROM environment WHERE experiment_id=? ORDER BY host", (eid,))}

    def _put_artifacts(self, eid: int, run_id: int | None, host: str | None,
                       artifacts: dict[str, bytes]) -> None:
        self.db.executemany(
            "INSERT INTO artifacts (experiment_id, run_id, host, name, size, data) VALUES (?,?,?,?,?,?)",
            [(eid, run_id, host, name, len(data), zlib.compress(data, 6)) for name, data in artifacts.items()])

    def artifact_names(self, eid: int, run_id: int | None = None) -> list[tuple[str, int]]:
        cond = "run_id IS NULL" if run_id is None else "run_id=?"
        args = (eid,) if run_id is None else (eid, run_id)
        return list(self.db.execute(
            f"SELECT name, size FROM artifacts WHERE experiment_id=? AND {cond} ORDER BY id", args))

    def artifact(self, eid: int, name: str, run_id: int | None = None) -> bytes | None:
        cond = "run_id IS NULL" if run_id is None else "run_id=?"
        args = (eid, name) if run_id is None else (eid, name, run_id)
        row = self.db.execute(f"SELECT data FROM artifacts WHERE experiment_id=? AND name=? AND {cond}"
                              " ORDER BY id DESC LIMIT 1", args).fetchone()
        return zlib.decompress(row[0]) if row else None


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *_):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _experiment(row: tuple) -> ExperimentRow:
    r = list(row)
    r[8] = json.loads(r[8])
    return ExperimentRow(*r)


def _run(row: tuple) -> RunRow:
    r = list(row)
    del r[1]  # experiment_id
    r[4] = json.loads(r[4])
    r[7] = bool(r[7])
    return RunRow(*r)
