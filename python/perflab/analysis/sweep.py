"""The sweep summary of a comparison: per candidate × metric, the geometric-mean ratio of
means across the matrix cells with its interval (seed 002's "average gain across 1..28
instances"), computed by `perflab.stats.sweep.sweep_summary` (pure).

It is part of every comparison with ≥ 2 cells (`compare_dataset` calls `summarize_sweeps`
after the per-cell comparisons), so it has to stay cheap: it reads the per-cell summaries
already computed (n, mean, sd) and makes one `sweep_summary_of_moments` call per
candidate × metric — the same numbers as `sweep_summary` over the samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scipy import special

from perflab.analysis.dataset import Dataset
from perflab.errors import InputError
from perflab.stats import Comparison, StatWarning, Summary, SweepSummary, Verdict, classify
from perflab.stats.sweep import sweep_summary_of_moments
from perflab.store import MetricDef

#: I² above this (and Cochran's Q significant at HETEROGENEITY_ALPHA) says the average hides a trend.
HETEROGENEITY_I2 = 0.5
HETEROGENEITY_ALPHA = 0.05
#: Cells named in a "left out" warning before "and N more".
MAX_NAMED = 4
#: Distinct values of the parameter a scaling fit (`perflab.analysis.scaling`) needs: a, b
#: and k (one more to judge the fit); with the exponent fixed (--exponent), one fewer. Here,
#: the lowest module that uses it: a heterogeneous sweep suggests a fit when one is possible.
MIN_SIZES = 4


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
            used, keys, few, nonpositive = [], [], [], []
            n_base = n_cand = 0
            for cell_key, _labels in data.cells:
                base = summaries.get((cell_key, data.baseline, metric.name))
                cand = summaries.get((cell_key, variant, metric.name))
                if base is None or cand is None or base.n < 2 or cand.n < 2:
                    few.append(cell_key)
                elif not (base.mean > 0 and cand.mean > 0):
                    nonpositive.append(cell_key)
                else:
                    used.append((base.n, base.mean, base.stddev, cand.n, cand.mean, cand.stddev))
                    keys.append(cell_key)
                    n_base += base.n
                    n_cand += cand.n
            out = set(few) | set(nonpositive)
            left_out = tuple(k for k, _ in data.cells if k in out)
            if len(used) < 2:
                if left_out:
                    warnings.append(
                        (
                            variant,
                            metric.name,
                            StatWarning(
                                "sweep_not_computed",
                                f"no geometric mean across the cells: only {len(used)} of {len(data.cells)} cells have "
                                f"≥ 2 runs per side and positive means; complete the runs of {_names(left_out)}",
                                {"cells": len(used)},
                            ),
                        )
                    )
                continue
            try:
                s = sweep_summary_of_moments(used, confidence)
            except ValueError as e:  # e.g. a NaN run value
                warnings.append(
                    (
                        variant,
                        metric.name,
                        StatWarning(
                            "sweep_not_computed", f"no geometric mean across the cells: {e}", {}
                        ),
                    )
                )
                continue
            comp = Comparison(
                method="sweep",
                confidence=confidence,
                n_baseline=n_base,
                n_candidate=n_cand,
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
            rows.append(row)
            if few:
                warnings.append(
                    (
                        variant,
                        metric.name,
                        StatWarning(
                            "sweep_cells_left_out",
                            f"the geometric mean across the cells leaves out {_names(few)}: a side has fewer than 2 runs "
                            "there; complete those runs to include them",
                            {"cells": len(few)},
                        ),
                    )
                )
            if nonpositive:
                warnings.append(
                    (
                        variant,
                        metric.name,
                        StatWarning(
                            "sweep_cells_left_out",
                            f"the geometric mean across the cells leaves out {_names(nonpositive)}: a mean is zero or "
                            "negative there, and a ratio of means needs positive ones",
                            {"cells": len(nonpositive)},
                        ),
                    )
                )
            w = _heterogeneity(data, row, keys)
            if w is not None:
                warnings.append((variant, metric.name, w))
    return Sweeps(rows, warnings)


def _heterogeneity(data: Dataset, row: SweepRow, keys: list[str]) -> StatWarning | None:
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
    return StatWarning(
        "sweep_heterogeneous",
        f"the geometric mean over {s.cells} cells hides a trend across {across}: the change goes from "
        f"{_pct(s.cell_ratios[lo])} at {keys[lo]} to {_pct(s.cell_ratios[hi])} at {keys[hi]} "
        f"(I² = {s.i_squared:.2f}: the cells differ far beyond run noise); read the cells{fit}",
        {"i_squared": s.i_squared, "q_statistic": s.q_statistic, "p_value": p},
    )


def _fittable(data: Dataset, param: str) -> bool:
    """Could `--scaling PARAM` fit this parameter: numeric, positive, with enough values?"""
    try:
        values = set(data.numeric_values(param).values())
    except InputError:
        return False
    return len(values) >= MIN_SIZES and min(values) > 0


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _names(keys: list[str] | tuple[str, ...]) -> str:
    shown = ", ".join(keys[:MAX_NAMED])
    return shown + (f" and {len(keys) - MAX_NAMED} more" if len(keys) > MAX_NAMED else "")
