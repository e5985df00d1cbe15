"""Metrics net of a harness overhead (spec: ``overhead`` / ``overhead_phase`` on a metric).

Each run stores the net value under the metric's name (gross − the overhead measured in that
same run), and the two parts as ``name.gross`` and ``name.overhead``. Every method compares
the per-run net values, so the overhead's uncertainty is in their spread, and noise the two
measurements share within a run (clock speed, cache state of that moment) cancels. Pooling
the overhead runs of both variants instead (`stats.compare_net`) is narrower only when that
within-run correlation is weak and the overhead is the same for every variant — assumptions
a comparison should not make silently, so it stays an API function, not the default.
"""

from __future__ import annotations

from typing import Any

from perflab.analysis.dataset import Dataset
from perflab.spec.suffixes import GROSS_SUFFIX, OVERHEAD_SUFFIX
from perflab.stats import StatWarning


def overhead_metrics(data: Dataset) -> dict[str, dict[str, Any]]:
    """metric name → its overhead source ({"command": …} or {"phase": …})."""
    return dict(data.experiment.settings.get("overheads") or {})


def overhead_warnings(
    data: Dataset, cell_key: str, variant: str, metric: str, confidence: float
) -> list[StatWarning]:
    """Overhead too large a share of the measured time, or net time not above zero."""
    gross = data.sample(cell_key, variant, metric + GROSS_SUFFIX)
    over = data.sample(cell_key, variant, metric + OVERHEAD_SUFFIX)
    if len(gross) < 2 or len(over) < 2:
        return []
    from perflab.stats.overhead import subtract_overhead  # (only where overheads were measured)

    try:
        return list(subtract_overhead(gross, over, confidence).warnings)
    except ValueError:
        return []
