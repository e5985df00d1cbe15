"""Results store (SQLite by default): experiments, runs, metrics, environment, artifacts."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.store.db import (
        DEFAULT_STORE,
        ExperimentRow,
        MetricDef,
        NewRun,
        RunRow,
        Store,
        default_store_path,
    )

__all__ = [
    "DEFAULT_STORE",
    "ExperimentRow",
    "MetricDef",
    "NewRun",
    "RunRow",
    "Store",
    "default_store_path",
]


def __getattr__(name: str) -> Any:
    """The store's names, imported on first use (PEP 562): the CLI builds its parser without
    loading SQLite and the store code."""
    if name not in __all__:
        raise AttributeError(f"module 'perflab.store' has no attribute {name!r}")
    return getattr(importlib.import_module("perflab.store.db"), name)
