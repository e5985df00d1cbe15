"""The geometric mean across the cells of an across-cells comparison (`perflab.analysis.across`):
per variant and metric, the average over the compared cells of the log ratio of the cell's
mean to its reference cell's mean — `perflab.stats.sweep.shared_reference_summary`, which
counts the runs the cells of one reference share — written and judged like
`summarize_sweeps`' rows."""

from __future__ import annotations

import math

from perflab.analysis.dataset import Dataset
from perflab.analysis.sweep import (
    CellTally,
    SweepRow,
    cell_names,
    heterogeneity_warning,
    left_out_warnings,
)
from perflab.stats import Comparison, StatWarning, Summary, classify
from perflab.stats.sweep import shared_reference_summary
from perflab.store import MetricDef


def across_sweep_row(
    data: Dataset,
    reference_of: dict[str, str],
    by_sample: dict[tuple[str, str, str], Summary | None],
    variant: str,
    metric: MetricDef,
    confidence: float,
    threshold: float,
) -> tuple[SweepRow | None, list[StatWarning]]:
    """The sweep row of ``variant`` × ``metric`` over ``data.cells`` (each against its
    reference), written and judged like `summarize_sweeps`' rows, and its warnings."""
    cells = CellTally()
    used: list[tuple[str, Summary, Summary]] = []
    for key, _ in data.cells:
        ref = reference_of[key]
        base, cand = (
            by_sample.get((ref, variant, metric.name)),
            by_sample.get((key, variant, metric.name)),
        )
        if base is None or cand is None or base.n < 2 or cand.n < 2:
            cells.few.append(key)
        elif not (base.mean > 0 and cand.mean > 0):
            cells.nonpositive.append(key)
        else:
            used.append((ref, base, cand))
            cells.keys.append(key)
            cells.n_cand += cand.n
    left_out = tuple(k for k, _ in data.cells if k in set(cells.few) | set(cells.nonpositive))
    if len(used) < 2:
        if not left_out:
            return None, []
        return None, [
            StatWarning(
                "sweep_not_computed",
                f"no geometric mean across the cells: only {len(used)} of {len(data.cells)} cells "
                f"have ≥ 2 runs per side and positive means; complete the runs of {cell_names(left_out)}",
                {"cells": len(used)},
            )
        ]
    try:
        s = shared_reference_summary(used, confidence)
    except ValueError as e:
        return None, [
            StatWarning("sweep_not_computed", f"no geometric mean across the cells: {e}", {})
        ]
    n_base = sum(b.n for b in {id(b): b for _, b, _ in used}.values())
    comp = Comparison(
        method="sweep",
        confidence=confidence,
        n_baseline=n_base,
        n_candidate=cells.n_cand,
        baseline_location=math.nan,
        candidate_location=math.nan,
        estimate=s.change,
        low=s.change_low,
        high=s.change_high,
        p_value=s.p_value,
        statistic="geometric mean",
        interval="sweep",
    )
    row = SweepRow(
        variant,
        metric,
        s,
        comp,
        classify(comp, metric.better, threshold),
        len(data.cells),
        left_out,
    )
    warnings = left_out_warnings(cells)
    w = heterogeneity_warning(data, row, cells.keys)
    if w is not None:
        warnings.append(w)
    return row, warnings
