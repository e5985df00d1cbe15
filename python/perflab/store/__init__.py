"""Results store (SQLite by default): experiments, runs, metrics, environment, artifacts."""

from perflab.store.db import (DEFAULT_STORE, ExperimentRow, MetricDef, NewRun, RunRow, Store,
                              default_store_path)

__all__ = ["DEFAULT_STORE", "ExperimentRow", "MetricDef", "NewRun", "RunRow", "Store",
           "default_store_path"]
