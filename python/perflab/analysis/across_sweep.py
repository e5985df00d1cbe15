"""The geometric mean across the cells of an across-cells comparison (`perflab.analysis.across`):
per variant and metric, the average over the compared cells of the log ratio of the cell's
mean to its reference cell's mean.

Why not `summarize_sweeps` as is: `stats.sweep` treats the cells as independent, but here the
cells of one reference share its runs (with ``instances = [1, 2, 4, 8, 14, 28]`` and
``--across instances=1``, the five ratios all divide by the same mean). The mean of the log
ratios is ``mean(log m_c) − Σ_g (k_g/K)·log m_g`` (K cells, k_g of them against reference g),
so by the delta method its variance is ``(Σ_c v_c + Σ_g k_g²·v_g) / K²`` (v = s²/(n·m²)), not
``Σ (v_c + v_g) / K²`` — which would count each reference's noise k_g times too little. The
t quantile uses Welch–Satterthwaite degrees of freedom over those same terms. Cochran's Q is
the generalized one, ``(r − μ̂)ᵀ Σ⁻¹ (r − μ̂)`` with the covariance Σ of the log ratios (the
cells of one reference covary by v_g), and I² = (Q − (K − 1)) / Q as in `stats.sweep`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from perflab.analysis.dataset import Dataset
from perflab.analysis.sweep import SweepRow, _Cells, _heterogeneity, _left_out_warnings, _names
from perflab.stats import Comparison, StatWarning, Summary, SweepSummary, classify
from perflab.stats.intervals import check_confidence
from perflab.store import MetricDef


def shared_reference_summary(
    cells: list[tuple[str, Summary, Summary]], confidence: float = 0.95
) -> SweepSummary:
    """The geometric-mean ratio over ``cells`` = [(reference key, reference's summary, cell's
    summary)], each side with ≥ 2 runs and a positive mean (module doc)."""
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
    k = r.size
    count = np.bincount(member, minlength=len(groups)).astype(float)
    parts = np.concatenate([vc, count**2 * vg])
    dofs = np.concatenate([nc - 1, ng - 1])
    tot = float(parts.sum())
    var = tot / k**2
    mean_log = float(r.mean())
    df = tot**2 / float(np.sum(parts**2 / dofs)) if tot > 0 else math.inf
    t = float(special.stdtrit(df, 0.5 + confidence / 2)) if tot > 0 else 0.0
    half = t * math.sqrt(var)
    if tot > 0:
        p = float(2 * special.stdtr(df, -abs(mean_log) / math.sqrt(var)))
    else:
        p = 1.0 if mean_log == 0 else 0.0
    q, i2 = _cochran(r, vc, vg, member)
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


def _cochran(
    r: np.ndarray, vc: np.ndarray, vg: np.ndarray, member: np.ndarray
) -> tuple[float, float]:
    """Generalized Cochran's Q and I² of the log ratios ``r`` (covariance: ``vc`` on the
    diagonal, plus ``vg`` of their reference between cells of the same reference)."""
    k = r.size
    if k < 2 or not np.all(vc > 0):
        return 0.0, 0.0
    cov = np.diag(vc) + vg[member][:, None] * (member[:, None] == member[None, :])
    try:
        inv_r, inv_1 = np.linalg.solve(cov, np.column_stack([r, np.ones(k)])).T
    except np.linalg.LinAlgError:
        return 0.0, 0.0
    mu = float(inv_r.sum() / inv_1.sum())
    q = float((r - mu) @ np.linalg.solve(cov, r - mu))
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    return q, i2


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
    cells = _Cells()
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
                f"have ≥ 2 runs per side and positive means; complete the runs of {_names(left_out)}",
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
    warnings = _left_out_warnings(cells)
    w = _heterogeneity(data, row, cells.keys)
    if w is not None:
        warnings.append(w)
    return row, warnings
