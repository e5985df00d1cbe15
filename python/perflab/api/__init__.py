"""perflab's Python API (docs/python-api.md): a store as pandas DataFrames and typed
comparisons, experiments run from Python, runs exported as CSV or Parquet.

    import perflab

    lab = perflab.open("perflab.db")
    lab.experiments()                  # DataFrame: one row per experiment
    lab.runs("last")                   # DataFrame: one row per run × metric
    result = lab.compare("last")       # ComparisonResult: .rows, .to_frame(), HTML in notebooks
    exp = perflab.run("spec.toml")     # Experiment: .status, .runs(), .compare()

It calls what the command line calls (the CLI's commands parse, call these functions,
print), so the numbers are the same. pandas is imported when a table is first built.
"""

from __future__ import annotations

from perflab.api.comparison import ComparisonResult, ComparisonRow
from perflab.api.lab import Experiment, Store, open
from perflab.api.running import run

__all__ = ["ComparisonResult", "ComparisonRow", "Experiment", "Store", "open", "run"]
