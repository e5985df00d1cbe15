"""Summary of a sweep: the geometric-mean ratio of candidate to baseline across cells.

Seed 002's "average gain across 1..28 instances" is an average over a fixed, chosen
set of cells, so its uncertainty comes from the runs only (a fixed-effect average):
per cell the log ratio of means r_i = log(m_b/m_a) with the delta-method variance
v_i = s_b²/(n_b·m_b²) + s_a²/(n_a·m_a²); the sweep's log ratio is the plain mean of
the r_i (every cell counts equally, as in the seed), its variance Σv_i/k², and its
t quantile uses Welch–Satterthwaite degrees of freedom pooled over all samples. A
geometric mean, not an arithmetic one, because ratios compose multiplicatively (a
2× gain and a 2× loss average to no change). Cochran's Q and I² report how much the
ratio varies between cells beyond run noise (I² near 1: the average hides a trend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

from perflab.stats.intervals import check_confidence
from perflab.stats.summary import as_sample


@dataclass(frozen=True)
class SweepSummary:
    """Geometric-mean ratio over ``cells`` cells.

    ratio, low, high:  geometric mean of candidate/baseline mean ratios and its
                       ``confidence`` interval (unitless; 4.0 means 4×, "+300%").
    change, change_low, change_high: the same as relative changes (ratio − 1, fractions).
    cell_ratios:       per-cell ratios of means, in input order.
    q_statistic, i_squared: Cochran's Q and I² ∈ [0, 1) of between-cell heterogeneity.
    df:                degrees of freedom of the interval.
    """

    cells: int
    confidence: float
    ratio: float
    low: float
    high: float
    cell_ratios: tuple[float, ...]
    q_statistic: float
    i_squared: float
    df: float

    @property
    def change(self) -> float:
        return self.ratio - 1

    @property
    def change_low(self) -> float:
        return self.low - 1

    @property
    def change_high(self) -> float:
        return self.high - 1

    def to_dict(self) -> dict:
        return {
            "cells": self.cells,
            "confidence": self.confidence,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "change": self.change,
            "change_low": self.change_low,
            "change_high": self.change_high,
            "cell_ratios": list(self.cell_ratios),
            "q_statistic": self.q_statistic,
            "i_squared": self.i_squared,
            "df": self.df,
        }


def sweep_summary(
    cells: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float = 0.95
) -> SweepSummary:
    """Geometric-mean ratio across (baseline, candidate) samples of each cell (≥ 2 runs each,
    positive means)."""
    confidence = check_confidence(confidence)
    if not cells:
        raise ValueError("a sweep summary needs at least one cell")
    r, v, terms = [], [], []
    for i, (base, cand) in enumerate(cells):
        a, b = as_sample(base), as_sample(cand)
        if a.size < 2 or b.size < 2:
            raise ValueError(f"cell {i}: need ≥ 2 runs per variant")
        ma, mb = float(a.mean()), float(b.mean())
        if ma <= 0 or mb <= 0:
            raise ValueError(f"cell {i}: a ratio of means needs positive means")
        wa = float(a.var(ddof=1)) / (a.size * ma * ma)
        wb = float(b.var(ddof=1)) / (b.size * mb * mb)
        r.append(math.log(mb / ma))
        v.append(wa + wb)
        terms.append(wa * wa / (a.size - 1) + wb * wb / (b.size - 1))
    k = len(r)
    r_arr, v_arr = np.array(r), np.array(v)
    mean_log = float(r_arr.mean())
    var = float(v_arr.sum()) / k**2
    tot = float(v_arr.sum())
    df = tot**2 / float(np.sum(terms)) if tot > 0 else math.inf
    t = float(sps.t.ppf(0.5 + confidence / 2, df)) if tot > 0 else 0.0
    half = t * math.sqrt(var)
    if k > 1 and np.all(v_arr > 0):
        w = 1 / v_arr
        pooled = float(np.sum(w * r_arr) / w.sum())
        q = float(np.sum(w * (r_arr - pooled) ** 2))
        i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    else:
        q, i2 = 0.0, 0.0
    return SweepSummary(
        cells=k,
        confidence=confidence,
        ratio=math.exp(mean_log),
        low=math.exp(mean_log - half),
        high=math.exp(mean_log + half),
        cell_ratios=tuple(math.exp(x) for x in r),
        q_statistic=q,
        i_squared=i2,
        df=df,
    )
