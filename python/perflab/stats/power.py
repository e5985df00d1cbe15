"""Power of Welch's test: how many runs the observed noise needs to resolve a change.

Power is the probability that a true relative change of the baseline mean is
declared at the given confidence; computed from the noncentral t distribution with
Welch–Satterthwaite degrees of freedom (equal run counts per variant), the standard
approximation for Welch's test.
"""

from __future__ import annotations

import math

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray, Values
from perflab.stats.intervals import check_confidence
from perflab.stats.summary import as_sample

DEFAULT_POWER = 0.8


def welch_power(
    runs: int | FloatArray,
    cv_baseline: float,
    cv_candidate: float,
    change: float,
    confidence: float = 0.95,
) -> FloatArray:
    """Power with ``runs`` per variant, for coefficients of variation (sd/baseline mean,
    fractions) and a true relative ``change`` (fraction). Vectorised over ``runs`` (≥ 2)."""
    confidence = check_confidence(confidence)
    n = np.asarray(runs, dtype=np.float64)
    va, vb = cv_baseline**2, cv_candidate**2
    if va + vb == 0:
        return np.where(change != 0, 1.0, 1 - confidence) * np.ones_like(n)
    se = np.sqrt((va + vb) / n)
    df = (va + vb) ** 2 * (n - 1) / (va**2 + vb**2)
    # scipy.special directly (the functions scipy.stats.t/nct/norm wrap): ~50x cheaper per call,
    # which matters when every cell of a large table is diagnosed
    t = special.stdtrit(df, 0.5 + confidence / 2)
    ncp = abs(change) / se
    with np.errstate(all="ignore"):
        exact = (1.0 - special.nctdtr(df, ncp, t)) + special.nctdtr(df, ncp, -t)
    # the noncentral t fails (NaN) far in its tail, where the normal approximation is exact enough
    approx = special.ndtr(ncp - t) + special.ndtr(-ncp - t)
    power: FloatArray = np.where(np.isfinite(exact), exact, approx)
    return power


def _cvs(baseline: Values, candidate: Values) -> tuple[float, float]:
    a = as_sample(baseline)
    b = as_sample(candidate)
    if a.size < 2 or b.size < 2:
        raise ValueError("need ≥ 2 runs per variant to estimate the noise")
    # coefficients of variation are scale-free: compute them on rescaled runs (1e-300…1e300)
    top = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    k = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 else 1.0
    a, b = a / k, b / k
    m = abs(float(a.mean()))
    if m == 0:
        raise ValueError("baseline mean is zero: relative changes are undefined")
    return float(a.std(ddof=1)) / m, float(b.std(ddof=1)) / m


def runs_needed(
    baseline: Values,
    candidate: Values,
    change: float,
    confidence: float = 0.95,
    power: float = DEFAULT_POWER,
    max_runs: int = 100_000,
) -> int | None:
    """Fewest runs per variant for which the noise observed in these samples detects a
    true relative ``change`` with probability ≥ ``power``; None if more than ``max_runs``."""
    if change == 0:
        raise ValueError("change must be non-zero")
    cva, cvb = _cvs(baseline, candidate)
    if cva == 0 and cvb == 0:
        return 2
    lo, hi = 2, 2
    while welch_power(hi, cva, cvb, change, confidence) < power:
        if hi >= max_runs:
            return None
        lo, hi = hi, min(hi * 2, max_runs)
    while lo < hi:  # power increases with n: bisect
        mid = (lo + hi) // 2
        if welch_power(mid, cva, cvb, change, confidence) >= power:
            hi = mid
        else:
            lo = mid + 1
    return int(hi)


def detectable_change(
    baseline: Values,
    candidate: Values,
    runs: int | None = None,
    confidence: float = 0.95,
    power: float = DEFAULT_POWER,
) -> float:
    """Smallest relative change (fraction, > 0) detected with probability ``power`` at
    ``runs`` per variant (default: the fewer of the two samples' runs)."""
    cva, cvb = _cvs(baseline, candidate)
    n = runs if runs is not None else min(len(baseline), len(candidate))
    if n < 2:
        raise ValueError("need ≥ 2 runs per variant")
    if cva == 0 and cvb == 0:
        return 0.0

    def f(d: float) -> float:
        return float(welch_power(n, cva, cvb, d, confidence)) - power

    scale = math.sqrt((cva**2 + cvb**2) / n)
    hi = 10 * scale
    while f(hi) < 0:
        hi *= 2
    lo = scale * 1e-6  # far below any detectable change; bracket on both sides, any magnitude
    while f(lo) >= 0 and lo > 0:
        lo /= 1e3
    if not lo > 0:
        return 0.0
    from scipy import optimize  # on use: ~0.1 s to import

    return float(optimize.brentq(f, lo, hi, xtol=scale * 1e-9, rtol=1e-12))
