"""perflab's use-case layer: the one orchestrator of what perflab does — run an
experiment, compare, report, read a store — called by the command line (`perflab.cli`:
parse, call here, print) and, as perflab's Python API (docs/python-api.md), by users:

    import perflab

    lab = perflab.open("perflab.db")
    lab.experiments()                  # DataFrame: one row per experiment
    lab.runs("last")                   # DataFrame: one row per run × metric
    result = lab.compare("last")       # ComparisonResult: .rows, .to_frame(), HTML in notebooks
    exp = perflab.run("spec.toml")     # Experiment: .status, .runs(), .compare()

The modules, by use case: `comparing` (a question about stored experiments → its
answer), `reporting` (a report's data, read once), `history` (a metric across the
versions of a series, and its change points), `running` (an experiment run),
`lab` and `comparison_table` (the store as DataFrames and typed rows), `frames`, `files`;
`modeling`, `probing`, `machine` (the platform commands). Every name here loads on first
use (PEP 562): `perflab --help` imports nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.api.comparison_table import ComparisonResult, ComparisonRow
    from perflab.api.lab import Experiment, Store, open
    from perflab.api.running import run

__all__ = ["ComparisonResult", "ComparisonRow", "Experiment", "Store", "open", "run"]

_HOMES = {
    "ComparisonResult": "perflab.api.comparison_table",
    "ComparisonRow": "perflab.api.comparison_table",
    "Experiment": "perflab.api.lab",
    "Store": "perflab.api.lab",
    "open": "perflab.api.lab",
    "run": "perflab.api.running",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'perflab.api' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
