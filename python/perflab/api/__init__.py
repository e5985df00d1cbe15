"""perflab's use-case layer: the one orchestrator of what perflab does — run an
experiment, report, import, read a store — called by the command line (`perflab.cli`:
parse, call here, print) and, as perflab's Python API (docs/python-api.md), by users:

    import perflab

    lab = perflab.open("perflab.db")
    lab.experiments()                  # DataFrame: one row per experiment
    lab.runs("last")                   # DataFrame: one row per run × metric
    result = lab.compare("last")       # Answer: .rows, .to_frame(), HTML in notebooks
    perflab.api.render(result, "markdown")   # `perflab compare --format markdown`
    exp = perflab.run("spec.toml")     # Experiment: .status, .runs(), .compare()

A question about stored runs is asked and answered in `perflab.analysis` (`request`,
`answer`: one `Answer` that every door reads). The modules here, by use case:
`reporting` (a report's data, read once), `rendering` (an answer as text, and in
notebooks), `history` (a metric across the versions of a series, and its change points),
`running` (an experiment run), `lab` (the store as DataFrames and answers), `files`;
`modeling`, `probing`, `machine` (the platform commands). Every name here loads on first
use (PEP 562): `perflab --help` imports nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.analysis.answer import Answer
    from perflab.analysis.comparison_table import ComparedCell
    from perflab.api.lab import Experiment, Store, open
    from perflab.api.rendering import render
    from perflab.api.running import run

__all__ = ["Answer", "ComparedCell", "Experiment", "Store", "open", "render", "run"]

_HOMES = {
    "Answer": "perflab.analysis.answer",
    "ComparedCell": "perflab.analysis.comparison_table",
    "Experiment": "perflab.api.lab",
    "Store": "perflab.api.lab",
    "open": "perflab.api.lab",
    "render": "perflab.api.rendering",
    "run": "perflab.api.running",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'perflab.api' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
