"""The store's rows read into values (`perflab.records`: what `perflab.store.db.Store`
returns and takes).

Rows are read by column name (`sqlite3.Row`, or a dict from PostgreSQL), so a column
added to a table, or a different column order in an old store, changes nothing here; a
column an older store lacks (read, never migrated, by a reading command) reads as None.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from perflab.records import ExperimentRow, MetricDef, RunRow


class Row(Protocol):
    """A row read by column name: `sqlite3.Row` or a dict (psycopg's ``dict_row``)."""

    def __getitem__(self, key: str, /) -> Any: ...


def experiment_row(row: Row) -> ExperimentRow:
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
        user=column_or_none(row, "user_name"),
        controller_host=column_or_none(row, "controller_host"),
        version=column_or_none(row, "version"),
        source_commit=column_or_none(row, "source_commit"),
        source_repo=column_or_none(row, "source_repo"),
    )


def column_or_none(row: Row, column: str) -> Any:
    """``row[column]``, or None where the row's store predates the column."""
    try:
        return row[column]
    except (IndexError, KeyError):  # sqlite3.Row raises IndexError for an unknown name
        return None


def run_row(row: Row) -> RunRow:
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
        device=column_or_none(row, "device"),
    )


def metric_def(row: Row) -> MetricDef:
    """A ``metric_defs`` row."""
    return MetricDef(name=row["name"], unit=row["unit"], better=row["better"])
