"""Results store (SQLite by default, or a team's PostgreSQL), opened as a `Database`:
experiments, runs, metrics, environment, artifacts."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.records import ExperimentRow, MetricDef, NewRun, RunRow
    from perflab.store.db import Database
    from perflab.store.location import DEFAULT_STORE, default_store_path

__all__ = [
    "DEFAULT_STORE",
    "Database",
    "ExperimentRow",
    "MetricDef",
    "NewRun",
    "RunRow",
    "default_store_path",
]


#: Where each name lives (db.py: the store; perflab.records: its row values; location.py: its
#: default path).
_HOMES = {
    "DEFAULT_STORE": "perflab.store.location",
    "ExperimentRow": "perflab.records",
    "MetricDef": "perflab.records",
    "NewRun": "perflab.records",
    "RunRow": "perflab.records",
    "Database": "perflab.store.db",
    "default_store_path": "perflab.store.location",
}


def __getattr__(name: str) -> Any:
    """The store's names, imported on first use (PEP 562): the CLI builds its parser without
    loading SQLite and the store code."""
    if name not in _HOMES:
        raise AttributeError(f"module 'perflab.store' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
