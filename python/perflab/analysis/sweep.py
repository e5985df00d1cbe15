"""The sweep summary of a comparison: per candidate × metric, the geometric-mean ratio of
means across the matrix cells with its interval (the kernel-bypass memcached scaling
experiment's "average gain across 1..28 instances"), computed by
`perflab.stats.sweep.sweep_summary` (pure).

It is part of every comparison with ≥ 2 cells (`compare_dataset` calls `summarize_sweeps`
after the per-cell comparisons), so it has to stay cheap: it reads the per-cell summaries
already computed (n, mean, sd) and makes one `sweep_summary_of_moments` call per
candidate × metric — the same numbers as `sweep_summary` over the samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.analysis.dataset import Dataset
from perflab.errors import InputError
from perflab.stats import Comparison, StatWarning, Summary, SweepSummary, Verdict, classify, special
from perflab.stats.sweep import sweep_summary_of_moments
from perflab.stats.warnings import EXPLAINS
from perflab.store import MetricDef

#: I² above this (and Cochran's Q significant at HETEROGENEITY_ALPHA) says the average hides a trend.
HETEROGENEITY_I2 = 0.5
HETEROGENEITY_ALPHA = 0.05
#: Cells named in a "left out" warning before "and N more".
MAX_NAMED = 4


@dataclass(frozen=True)
class SweepRow:
    """The geometric-mean ratio of ``variant`` against the baseline for ``metric`` over the cells.

    summary:     the statistics (ratio, interval, Cochran's Q, I²; see `SweepSummary`).
    comparison:  the same as a relative change (estimate/low/high = ratio − 1, fractions;
                 method ``"sweep"``, statistic ``"geometric mean"``), so that it is written and
                 judged exactly like a TLDR cell.
    verdict:     `classify` of ``comparison`` with the metric's ``better`` and the threshold.
    total_cells: cells of the matrix; ``summary.cells`` of them are averaged.
    left_out:    keys of the cells left out (a side with < 2 runs or a non-positive mean).
    """

    variant: str
    metric: MetricDef
    summary: SweepSummary
    comparison: Comparison
    verdict: Verdict
    total_cells: int
    left_out: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How a table names the row: ``all 6 cells (geometric mean)``."""
        k = self.summary.cells
        return (
            f"all {k} cells (geometric mean)"
            if k == self.total_cells
            else f"{k} of {self.total_cells} cells (geometric mean)"
        )

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "variant": self.variant,
            "metric": self.metric.name,
            "label": self.label,
            "cells": s.cells,
            "total_cells": self.total_cells,
            "left_out": list(self.left_out),
            "confidence": s.confidence,
            "ratio": s.ratio,
            "ratio_low": s.low,
            "ratio_high": s.high,
            "change": s.change,
            "low": s.change_low,
            "high": s.change_high,
            "q_statistic": s.q_statistic,
            "i_squared": s.i_squared,
            "df": s.df,
            "cell_ratios": list(s.cell_ratios),
            "verdict": self.verdict.value,
        }


@dataclass(frozen=True)
class Sweeps:
    """Rows in (candidate, metric) order, and warnings as (variant, metric, warning)."""

    rows: list[SweepRow] = field(default_factory=list)
    warnings: list[tuple[str, str, StatWarning]] = field(default_factory=list)


def summarize_sweeps(
    data: Dataset,
    summaries: dict[tuple[str, str, str], Summary],
    confidence: float,
    threshold: float = 0.0,
) -> Sweeps:
    """Sweep rows of every candidate × metric of ``data`` (nothing for fewer than 2 cells).

    summaries: (cell_key, variant, metric) → the `Summary` of that sample (absent: no runs).
    """
    if len(data.cells) < 2:
        return Sweeps()
    rows: list[SweepRow] = []
    warnings: list[tuple[str, str, StatWarning]] = []
    for variant in data.variants:
        if variant == data.baseline:
            continue
        for metric in data.metrics:
            row, found = _sweep_row(data, summaries, variant, metric, confidence, threshold)
            if row is not None:
                rows.append(row)
            warnings += [(variant, metric.name, w) for w in found]
    return Sweeps(rows, warnings)


@dataclass
class CellTally:
    """The cells of one candidate × metric: those averaged (their keys, each one's moments for
    `sweep_summary_of_moments`, the runs per side) and those left out, by reason."""

    moments: list[tuple[int, float, float, int, float, float]] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    n_base: int = 0
    n_cand: int = 0
    few: list[str] = field(default_factory=list)  # a side with < 2 runs
    nonpositive: list[str] = field(default_factory=list)  # a mean ≤ 0


def _cells(
    data: Dataset, summaries: dict[tuple[str, str, str], Summary], variant: str, metric: str
) -> CellTally:
    """Which cells of ``variant`` × ``metric`` the geometric mean can average, and which not."""
    out = CellTally()
    for cell_key, _labels in data.cells:
        base = summaries.get((cell_key, data.baseline, metric))
        cand = summaries.get((cell_key, variant, metric))
        if base is None or cand is None or base.n < 2 or cand.n < 2:
            out.few.append(cell_key)
        elif not (base.mean > 0 and cand.mean > 0):
            out.nonpositive.append(cell_key)
        else:
            out.moments.append((base.n, base.mean, base.stddev, cand.n, cand.mean, cand.stddev))
            out.keys.append(cell_key)
            out.n_base += base.n
            out.n_cand += cand.n
    return out


def _sweep_row(
    data: Dataset,
    summaries: dict[tuple[str, str, str], Summary],
    variant: str,
    metric: MetricDef,
    confidence: float,
    threshold: float,
) -> tuple[SweepRow | None, list[StatWarning]]:
    """The sweep row of one candidate × metric (None when it cannot be computed), and the
    warnings about it: cells left out, a trend the average hides, or why there is no row."""
    cells = _cells(data, summaries, variant, metric.name)
    out = set(cells.few) | set(cells.nonpositive)
    left_out = tuple(k for k, _ in data.cells if k in out)
    if len(cells.moments) < 2:
        if not left_out:
            return None, []
        return None, [
            StatWarning(
                "sweep_not_computed",
                f"no geometric mean across the cells: only {len(cells.moments)} of {len(data.cells)} cells have "
                f"≥ 2 runs per side and positive means; complete the runs of {cell_names(left_out)}",
                {"cells": len(cells.moments)},
            )
        ]
    try:
        s = sweep_summary_of_moments(cells.moments, confidence)
    except ValueError as e:  # e.g. a NaN run value
        return None, [
            StatWarning("sweep_not_computed", f"no geometric mean across the cells: {e}", {})
        ]
    comp = Comparison(
        method="sweep",
        confidence=confidence,
        n_baseline=cells.n_base,
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
    verdict = classify(comp, metric.better, threshold)
    row = SweepRow(variant, metric, s, comp, verdict, len(data.cells), left_out)
    warnings = left_out_warnings(cells)
    w = heterogeneity_warning(data, row, cells.keys)
    if w is not None:
        warnings.append(w)
    return row, warnings


def left_out_warnings(cells: CellTally) -> list[StatWarning]:
    """Why cells are missing from a geometric mean that was computed."""
    warnings = []
    if cells.few:
        warnings.append(
            StatWarning(
                "sweep_cells_left_out",
                f"the geometric mean across the cells leaves out {cell_names(cells.few)}: a side has fewer than 2 runs "
                "there; complete those runs to include them",
                {"cells": len(cells.few)},
            )
        )
    if cells.nonpositive:
        warnings.append(
            StatWarning(
                "sweep_cells_left_out",
                f"the geometric mean across the cells leaves out {cell_names(cells.nonpositive)}: a mean is zero or "
                "negative there, and a ratio of means needs positive ones",
                {"cells": len(cells.nonpositive)},
            )
        )
    return warnings


def heterogeneity_warning(data: Dataset, row: SweepRow, keys: list[str]) -> StatWarning | None:
    s = row.summary
    if s.cells < 2 or s.i_squared <= HETEROGENEITY_I2:
        return None
    p = float(special.chdtrc(s.cells - 1, s.q_statistic))
    if not p < HETEROGENEITY_ALPHA:
        return None
    lo = min(range(len(keys)), key=lambda i: s.cell_ratios[i])
    hi = max(range(len(keys)), key=lambda i: s.cell_ratios[i])
    across = " × ".join(data.params) or "the cells"
    fittable = [param for param in data.params if _fittable(data, param)]
    fit = (
        f", or fit how it changes with `perflab compare {data.experiment.id} --scaling {fittable[0]}`"
        if fittable
        else ""
    )
    # cells that go opposite ways change how the average reads; cells that go one way by
    # different amounts are what an average of them is (each cell is in the table)
    opposite = s.cell_ratios[lo] < 1 < s.cell_ratios[hi]
    return StatWarning(
        "sweep_heterogeneous",
        f"the geometric mean over {s.cells} cells hides a trend across {across}: the change goes from "
        f"{_pct(s.cell_ratios[lo])} at {keys[lo]} to {_pct(s.cell_ratios[hi])} at {keys[hi]} "
        f"(I² = {s.i_squared:.2f}: the cells differ far beyond run noise); read the cells{fit}",
        {"i_squared": s.i_squared, "q_statistic": s.q_statistic, "p_value": p},
        None if opposite else EXPLAINS,
    )


def _fittable(data: Dataset, param: str) -> bool:
    """Could `--scaling PARAM` fit this parameter: numeric, positive, with enough values?"""
    from perflab.stats.scaling import MIN_SIZES  # distinct sizes a scaling fit needs

    try:
        values = set(data.numeric_values(param).values())
    except InputError:
        return False
    return len(values) >= MIN_SIZES and min(values) > 0


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def cell_names(keys: list[str] | tuple[str, ...]) -> str:
    shown = ", ".join(keys[:MAX_NAMED])
    return shown + (f" and {len(keys) - MAX_NAMED} more" if len(keys) > MAX_NAMED else "")
