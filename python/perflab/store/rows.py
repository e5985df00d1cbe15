"""The store's rows as values: what `perflab.store.db.Store` returns and takes.

Rows are read by column name (the connection's row factory is `sqlite3.Row`), so a
column added to a table, or a different column order in an old store, changes nothing
here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

#: Statuses of a run that has ended (its metrics and artifacts saved).
FINISHED = ("ok", "failed", "timeout")


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
    settings: dict[str, Any]
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
    cell: dict[str, str]
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
    cell: dict[str, str]
    variant: str
    repetition: int
    warmup: bool = False
    status: str = "pending"
    metrics: dict[str, float] | None = None


def experiment_row(row: sqlite3.Row) -> ExperimentRow:
    """An ``experiments`` row; its settings JSON decoded."""
    return ExperimentRow(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        source=row["source"],
        spec_path=row["spec_path"],
        spec_text=row["spec_text"],
        spec_sha256=row["spec_sha256"],
        baseline=row["baseline"],
        settings=json.loads(row["settings"]),
        status=row["status"],
        created_at=row["created_at"],
        finished_at=row["finished_at"],
        runner_pid=row["runner_pid"],
        runner_host=row["runner_host"],
    )


def run_row(row: sqlite3.Row) -> RunRow:
    """A ``runs`` row; its cell JSON decoded, warmup as a bool."""
    return RunRow(
        id=row["id"],
        order_index=row["order_index"],
        block=row["block"],
        cell_key=row["cell_key"],
        cell=json.loads(row["cell"]),
        variant=row["variant"],
        repetition=row["repetition"],
        warmup=bool(row["warmup"]),
        status=row["status"],
        reason=row["reason"],
        attempts=row["attempts"],
        host=row["host"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        pid=row["pid"],
        pid_start=row["pid_start"],
    )


def metric_def(row: sqlite3.Row) -> MetricDef:
    """A ``metric_defs`` row."""
    return MetricDef(name=row["name"], unit=row["unit"], better=row["better"])
