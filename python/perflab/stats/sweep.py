"""Summary of a sweep: the geometric-mean ratio of candidate to baseline across cells.

The kernel-bypass memcached scaling experiment's "average gain across 1..28 instances" is
an average over a fixed, chosen set of cells, so its uncertainty comes from the runs only
(a fixed-effect average):
per cell the log ratio of means r_i = log(m_b/m_a) with the delta-method variance
v_i = s_b²/(n_b·m_b²) + s_a²/(n_a·m_a²); the sweep's log ratio is the plain mean of
the r_i (every cell counts equally, as in the experiment), its variance Σv_i/k², and its
t quantile uses Welch–Satterthwaite degrees of freedom pooled over all samples. A
geometric mean, not an arithmetic one, because ratios compose multiplicatively (a
2× gain and a 2× loss average to no change). Cochran's Q and I² report how much the
ratio varies between cells beyond run noise (I² near 1: the average hides a trend).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray
from perflab.stats.intervals import check_confidence
from perflab.stats.summary import Summary, as_sample, scaled


@dataclass(frozen=True)
class SweepSummary:
    """Geometric-mean ratio over ``cells`` cells.

    ratio, low, high:  geometric mean of candidate/baseline mean ratios and its
                       ``confidence`` interval (unitless; 4.0 means 4×, "+300%").
    change, change_low, change_high: the same as relative changes (ratio − 1, fractions).
    cell_ratios:       per-cell ratios of means, in input order.
    q_statistic, i_squared: Cochran's Q and I² ∈ [0, 1) of between-cell heterogeneity.
    df:                degrees of freedom of the interval.
    p_value:           two-sided p-value in [0, 1] of "no change on average" (geometric-mean
                       ratio 1) by the t statistic the interval is built from, so that the
                       interval excludes ratio 1 ⇔ p_value ≤ 1 − confidence, at every level.

    The change is a ratio (positive means only), so low > 0 and change_low > −1 always.
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
    p_value: float = math.nan

    @property
    def change(self) -> float:
        return self.ratio - 1

    @property
    def change_low(self) -> float:
        return self.low - 1

    @property
    def change_high(self) -> float:
        return self.high - 1

    def to_dict(self) -> dict[str, Any]:
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
            "p_value": self.p_value,
        }


def sweep_summary(
    cells: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float = 0.95
) -> SweepSummary:
    """Geometric-mean ratio across (baseline, candidate) samples of each cell (≥ 2 runs each,
    positive means)."""
    confidence = check_confidence(confidence)
    if not cells:
        raise ValueError("a sweep summary needs at least one cell")
    moments = []
    for i, (base, cand) in enumerate(cells):
        a, b = as_sample(base), as_sample(cand)
        if a.size < 2 or b.size < 2:
            raise ValueError(f"cell {i}: need ≥ 2 runs per variant")
        ka, xa = scaled(a)
        kb, xb = scaled(b)
        moments.append(
            (
                a.size,
                ka * float(xa.mean()),
                ka * float(xa.std(ddof=1)),
                b.size,
                kb * float(xb.mean()),
                kb * float(xb.std(ddof=1)),
            )
        )
    return sweep_summary_of_moments(moments, confidence)


def sweep_summary_of_moments(
    cells: Sequence[tuple[int, float, float, int, float, float]], confidence: float = 0.95
) -> SweepSummary:
    """`sweep_summary` from each cell's (n, mean, sd) of the baseline then the candidate
    (sd with ddof=1, in the metric's unit): for callers that already summarized the samples,
    e.g. every comparison of thousands of cells."""
    confidence = check_confidence(confidence)
    if not cells:
        raise ValueError("a sweep summary needs at least one cell")
    arr = np.array(cells, dtype=np.float64).reshape(-1, 6)
    na, ma, sa, nb, mb, sb = arr.T
    bad = np.flatnonzero((na < 2) | (nb < 2))
    if bad.size:
        raise ValueError(f"cell {int(bad[0])}: need ≥ 2 runs per variant")
    bad = np.flatnonzero(~((ma > 0) & (mb > 0)))
    if bad.size:
        raise ValueError(f"cell {int(bad[0])}: a ratio of means needs positive means")
    if not np.all(np.isfinite(arr)):
        raise ValueError("means and standard deviations must be finite")
    # relative variances as (sd/mean)²: no overflow or underflow for any magnitude
    wa = (sa / ma) ** 2 / na
    wb = (sb / mb) ** 2 / nb
    r_arr = np.log(mb) - np.log(ma)
    v_arr = wa + wb
    if r_arr.size > 1 and np.all(v_arr > 0):
        w = 1 / v_arr
        pooled = float(np.sum(w * r_arr) / w.sum())
        q = float(np.sum(w * (r_arr - pooled) ** 2))
    else:
        q = 0.0
    terms = wa * wa / (na - 1) + wb * wb / (nb - 1)
    return _geometric_mean(r_arr, float(v_arr.sum()), float(terms.sum()), q, confidence)


def _geometric_mean(
    r: FloatArray, tot: float, squares: float, q: float, confidence: float
) -> SweepSummary:
    """The mean of the log ratios ``r`` as a ratio with its t interval and p-value: the
    variance of the mean is ``tot / K²`` (``tot``: the sum of the variance terms) with
    Welch–Satterthwaite degrees of freedom ``tot² / squares`` (``squares``: the sum of each
    term² over its degrees of freedom); ``q`` is Cochran's Q of ``r``, I² from it."""
    k = int(r.size)
    mean_log = float(r.mean())
    var = tot / k**2
    df = tot**2 / squares if tot > 0 else math.inf
    # scipy.special directly: the function scipy.stats.t.ppf wraps, far cheaper per call
    t = float(special.stdtrit(df, 0.5 + confidence / 2)) if tot > 0 else 0.0
    half = t * math.sqrt(var)
    if tot > 0:
        p = float(2 * special.stdtr(df, -abs(mean_log) / math.sqrt(var)))
    else:  # every run of every cell identical: the ratio is known exactly
        p = 1.0 if mean_log == 0 else 0.0
    i2 = max(0.0, (q - (k - 1)) / q) if k > 1 and q > 0 else 0.0
    return SweepSummary(
        cells=k,
        confidence=confidence,
        ratio=math.exp(mean_log),
        low=math.exp(mean_log - half),
        high=math.exp(mean_log + half),
        cell_ratios=tuple(float(x) for x in np.exp(r)),
        q_statistic=q,
        i_squared=i2,
        df=df,
        p_value=p,
    )


def shared_reference_summary(
    cells: Sequence[tuple[str, Summary, Summary]], confidence: float = 0.95
) -> SweepSummary:
    """The geometric-mean ratio over ``cells`` = [(reference key, reference's summary, cell's
    summary)] where several cells share one reference's runs (each side with ≥ 2 runs and a
    positive mean): ``perflab compare --across``.

    Why not `sweep_summary_of_moments`: it treats the cells as independent, but the cells of
    one reference share its runs (with ``instances = [1, 2, 4, 8, 14, 28]`` and ``--across
    instances=1`` the five ratios all divide by the same mean). The mean of the log ratios
    is ``mean(log m_c) − Σ_g (k_g/K)·log m_g`` (K cells, k_g of them against reference g), so
    by the delta method its variance is ``(Σ_c v_c + Σ_g k_g²·v_g) / K²`` (v = s²/(n·m²)),
    not ``Σ (v_c + v_g) / K²`` — which would count each reference's noise k_g times too
    little; the degrees of freedom are Welch–Satterthwaite's over those same terms. Cochran's
    Q is the generalized one, ``(r − μ̂)ᵀ Σ⁻¹ (r − μ̂)`` with the covariance Σ of the log
    ratios (the cells of one reference covary by v_g)."""
    confidence = check_confidence(confidence)
    if not cells:
        raise ValueError("a sweep summary needs at least one cell")
    groups = list(dict.fromkeys(g for g, _, _ in cells))
    index = {g: i for i, g in enumerate(groups)}
    member = np.array([index[g] for g, _, _ in cells])
    ref = {g: s for g, s, _ in cells}
    nc, mc, sc = (
        np.array([getattr(c, f) for _, _, c in cells], dtype=float) for f in ("n", "mean", "stddev")
    )
    ng, mg, sg = (
        np.array([getattr(ref[g], f) for g in groups], dtype=float) for f in ("n", "mean", "stddev")
    )
    if np.any(nc < 2) or np.any(ng < 2):
        raise ValueError("need ≥ 2 runs per side")
    if not (np.all(mc > 0) and np.all(mg > 0)):
        raise ValueError("a ratio of means needs positive means")
    vc = (sc / mc) ** 2 / nc
    vg = (sg / mg) ** 2 / ng
    r = np.log(mc) - np.log(mg[member])
    count = np.bincount(member, minlength=len(groups)).astype(float)
    parts = np.concatenate([vc, count**2 * vg])
    dofs = np.concatenate([nc - 1, ng - 1])
    squares = float(np.sum(parts**2 / dofs))
    return _geometric_mean(r, float(parts.sum()), squares, _cochran(r, vc, vg, member), confidence)


def _cochran(r: FloatArray, vc: FloatArray, vg: FloatArray, member: np.ndarray) -> float:
    """Generalized Cochran's Q of the log ratios ``r`` (covariance: ``vc`` on the diagonal,
    plus ``vg`` of their reference between cells of the same reference)."""
    k = r.size
    if k < 2 or not np.all(vc > 0):
        return 0.0
    cov = np.diag(vc) + vg[member][:, None] * (member[:, None] == member[None, :])
    try:
        inv_r, inv_1 = np.linalg.solve(cov, np.column_stack([r, np.ones(k)])).T
    except np.linalg.LinAlgError:
        return 0.0
    mu = float(inv_r.sum() / inv_1.sum())
    return float((r - mu) @ np.linalg.solve(cov, r - mu))
