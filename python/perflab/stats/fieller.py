"""Fieller's confidence interval for a ratio of two estimated quantities.

For estimates N̂ and D̂ with variances v_N, v_D and covariance c, the set of ratios ρ
for which (N̂ − ρD̂)² ≤ t²(v_N − 2ρc + ρ²v_D) is Fieller's interval. Unlike dividing a
difference's interval by the (uncertain) denominator, it accounts for the denominator's
uncertainty, and it is exact when the estimates are jointly normal. scipy has no
implementation, hence this one (a quadratic, vectorised over a batch).
"""

from __future__ import annotations

import numpy as np

from perflab.stats.warnings import StatWarning


def fieller_ratio(
    num: np.ndarray,
    den: np.ndarray,
    var_num: np.ndarray,
    var_den: np.ndarray,
    cov: np.ndarray | float,
    t: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds (low, high) of the ratio num/den; NaN where the set is not a finite interval.

    The set is bounded only when the denominator is significantly non-zero
    (D̂² > t²·v_D); otherwise it is the whole line or its complement, and NaN is
    returned for both bounds. Arrays broadcast; results have the broadcast shape.
    """
    num, den, var_num, var_den, cov, t = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (num, den, var_num, var_den, cov, t))
    )
    t2 = t * t
    qa = den * den - t2 * var_den
    qb = num * den - t2 * cov
    qc = num * num - t2 * var_num
    disc = qb * qb - qa * qc
    ok = (qa > 0) & (disc >= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(np.where(ok, disc, 0.0))
        low = np.where(ok, (qb - root) / qa, np.nan)
        high = np.where(ok, (qb + root) / qa, np.nan)
    return low, high


def unbounded_warning(baseline_mean: float, remedy: str) -> StatWarning:
    """Fieller's interval is unbounded when the baseline mean is not distinguishable from zero."""
    return StatWarning(
        "ratio_unbounded",
        "the baseline mean is not significantly different from zero, so the ratio's interval "
        f"is unbounded: {remedy}",
        {"baseline_mean": float(baseline_mean)},
    )
