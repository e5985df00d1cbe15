"""Fieller's confidence interval for a ratio of two estimated quantities, on positive ratios.

For estimates N̂ and D̂ with variances v_N, v_D and covariance c, the set of ratios ρ
for which T(ρ)² = (N̂ − ρD̂)² / (v_N − 2ρc + ρ²v_D) ≤ t² is Fieller's interval: it inverts
the t-test of N − ρD = 0 at every ρ, so at ρ = 1 it *is* the test of N = D (Welch's, the
paired t-test…), at every level. Unlike dividing a difference's interval by the (uncertain)
denominator it accounts for the denominator's uncertainty, and it is exact when the
estimates are jointly normal. scipy has no implementation, hence this one (a quadratic,
vectorised over a batch).

When every run is positive the true ratio is positive, and the set is taken on ρ > 0
(`fieller_positive`). With no covariance it is then always one interval (T decreases
in ρ), which may reach 0 (the numerator is not significantly above 0 at this level) or
+∞ (nor is the denominator). Such an end says "anything down to −100%" or "anything up";
a finite stand-in is shown instead — the log-ratio interval's bound, never on the wrong
side of the estimate or of ratio 1 — and marked, so that the decision, which is the
test's, is untouched. With a covariance the set can have two pieces; its hull is used
and `hull_p_value` gives the p-value that agrees with that hull at every level.
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray
from perflab.stats.warnings import StatWarning

#: An argument broadcast against the others: an (E,) array or one number for every row.
_Arg: TypeAlias = FloatArray | float


def fieller_ratio(
    num: FloatArray,
    den: FloatArray,
    var_num: FloatArray,
    var_den: FloatArray,
    cov: FloatArray | float,
    t: FloatArray | float,
) -> tuple[FloatArray, FloatArray]:
    """Bounds (low, high) of the ratio num/den over all real ρ; NaN where not a finite interval.

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


def _roots(
    qa: FloatArray, qb: FloatArray, qc: FloatArray, clamp: BoolArray
) -> tuple[FloatArray, FloatArray]:
    """Roots (r1 ≤ r2) of qa·ρ² − 2qb·ρ + qc, stably; NaN where there is no real root
    (a negative discriminant is taken as 0 where ``clamp``: a root must exist there)."""
    disc = qb * qb - qa * qc
    disc = np.where(clamp, np.maximum(disc, 0.0), disc)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        root = np.sqrt(np.maximum(disc, 0.0))
        q = qb + np.where(qb >= 0, root, -root)
        r_a = np.where(qa != 0, q / qa, np.nan)
        r_b = np.where(q != 0, qc / q, np.nan)
    r1 = np.fmin(r_a, r_b)
    r2 = np.fmax(r_a, r_b)
    none = disc < 0
    return np.where(none, np.nan, r1), np.where(none, np.nan, r2)


class PositiveSet(NamedTuple):
    """The piece of Fieller's set around the estimate on ρ > 0 (`fieller_positive`)."""

    low: FloatArray  # a ratio; 0 where ``at_zero``
    high: FloatArray  # a ratio; +inf where ``at_inf``
    at_zero: BoolArray  # the piece reaches down to ρ → 0
    at_inf: BoolArray  # the piece has no upper bound


def fieller_positive(
    num: _Arg, den: _Arg, var_num: _Arg, var_den: _Arg, cov: _Arg, t: _Arg
) -> PositiveSet:
    """Fieller's set on ρ > 0 around the estimate, for positive estimates:
    (low, high, at_zero, at_inf).

    The set {ρ > 0 : |T(ρ)| ≤ t}; with a covariance it can have two pieces (one far out
    near 0 or +∞, where the denominator's own noise dominates), and the piece holding the
    estimate ρ̂ is taken. low/high are ratios; ``at_zero`` marks rows where that piece
    reaches down to ρ → 0 (low is then 0), ``at_inf`` rows where it has no upper bound
    (high is then +inf). num and den must be positive; arrays broadcast to (E,).
    """
    num, den, vn, vd, cov, t = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (num, den, var_num, var_den, cov, t))
    )
    t2 = t * t
    qa = den * den - t2 * vd
    qb = num * den - t2 * cov
    qc = num * num - t2 * vn
    up = qa > 0  # bounded over the reals: [r1, r2], around ρ̂ (so a root exists)
    r1, r2 = _roots(qa, qb, qc, up)
    rho = num / den
    # Q(ρ) = qa ρ² − 2 qb ρ + qc ≤ 0 is the set; ρ̂ always belongs to it.
    # qa < 0: (−∞, r1] ∪ [r2, ∞), or everything without real roots: ρ̂'s piece.
    in_upper = np.isnan(r2) | (rho >= r2)
    low_down = np.where(np.isnan(r1), 0.0, np.where(in_upper, r2, 0.0))
    high_down = np.where(np.isnan(r1) | in_upper, np.inf, r1)
    # qa == 0: Q is linear, −2 qb ρ + qc ≤ 0, i.e. ρ ≥ r (qb > 0) or ρ ≤ r (qb < 0).
    r_lin = np.where(np.isnan(r1), r2, r1)
    flat = qa == 0
    low = np.where(up, r1, np.where(flat, np.where(qb > 0, r_lin, 0.0), low_down))
    high = np.where(up, r2, np.where(flat, np.where(qb < 0, r_lin, np.inf), high_down))
    low = np.where(np.isnan(low), 0.0, low)
    high = np.where(np.isnan(high), np.inf, high)
    at_zero = ~(low > 0)
    low = np.where(at_zero, 0.0, low)
    # the estimate is always inside (rounding aside)
    low = np.fmin(low, rho)
    high = np.fmax(high, rho)
    at_inf = np.isinf(high)
    return PositiveSet(low, high, at_zero, at_inf)


def component_p_value(
    num: _Arg, den: _Arg, var_num: _Arg, var_den: _Arg, cov: _Arg, df: _Arg
) -> FloatArray:
    """Two-sided p-value of ratio 1 that agrees with `fieller_positive` at every level.

    Ratio 1 is outside ρ̂'s piece of the set at level t ⇔ some ρ between 1 and ρ̂ has
    |T(ρ)| > t, so p = 2·F_df(−max |T| over [1, ρ̂]). |T| has one critical point besides
    ρ̂ (where it is 0), so the maximum is exact. When T is monotone there — always without
    a covariance, and in practice with one — this is the plain t-test of ratio 1
    (Welch's, the paired t-test).
    """
    num, den, vn, vd, cov, df = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.float64) for x in (num, den, var_num, var_den, cov, df))
    )

    def abs_t(r: _Arg) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            n = num - r * den
            d = vn - 2 * r * cov + r * r * vd
            out = np.abs(n) / np.sqrt(np.maximum(d, 0.0))
        out = np.where(n == 0, 0.0, out)
        stat: FloatArray = np.where(np.isnan(out), np.inf, out)
        return stat

    with np.errstate(invalid="ignore", divide="ignore"):
        rho = num / den
        rc = (den * vn - num * cov) / (den * cov - num * vd)
    lo, hi = np.minimum(rho, 1.0), np.maximum(rho, 1.0)
    inside = np.isfinite(rc) & (rc > lo) & (rc < hi)
    stat = np.maximum(abs_t(1.0), np.where(inside, abs_t(np.where(inside, rc, 1.0)), 0.0))
    with np.errstate(invalid="ignore"):
        p: FloatArray = np.where(np.isinf(stat), 0.0, 2 * special.stdtr(df, -stat))
    return p


class LogRatio(NamedTuple):
    """A delta-method interval of log(num/den) (`log_ratio`)."""

    log_ratio: FloatArray
    se: FloatArray  # of the log ratio
    low: FloatArray  # a ratio (not its log)
    high: FloatArray  # a ratio (not its log)


def log_ratio(
    num: _Arg, den: _Arg, var_num: _Arg, var_den: _Arg, cov: _Arg, df: _Arg, t: _Arg
) -> LogRatio:
    """Delta-method interval of log(num/den): (log ratio, its se, low ratio, high ratio)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        lr = np.log(num) - np.log(den)
        var = var_num / (num * num) + var_den / (den * den) - 2 * cov / (num * den)
        se = np.sqrt(np.maximum(var, 0.0))
        return LogRatio(lr, se, np.exp(lr - t * se), np.exp(lr + t * se))


def stand_in(
    low: FloatArray,
    high: FloatArray,
    at_zero: BoolArray,
    at_inf: BoolArray,
    rho: FloatArray,
    contains_one: BoolArray,
    lr_low: FloatArray,
    lr_high: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """Finite bounds for an end of Fieller's set at 0 or +∞: the log-ratio bound, moved no
    further in than the estimate ρ̂ and, when the set contains ratio 1, than 1 — so the
    interval keeps the estimate and the decision (1 inside or not) of the test."""
    inner_low = np.where(contains_one, np.minimum(rho, 1.0), rho)
    inner_high = np.where(contains_one, np.maximum(rho, 1.0), rho)
    with np.errstate(invalid="ignore"):
        new_low = np.where(
            at_zero, np.fmin(np.where(lr_low > 0, lr_low, inner_low), inner_low), low
        )
        new_high = np.where(
            at_inf, np.fmax(np.where(np.isfinite(lr_high), lr_high, inner_high), inner_high), high
        )
    return new_low, new_high


def unbounded_warning(baseline_mean: float, remedy: str) -> StatWarning:
    """Fieller's interval is unbounded when the baseline mean is not distinguishable from zero."""
    return StatWarning(
        "ratio_unbounded",
        "the baseline mean is not significantly different from zero, so the ratio's interval "
        f"is unbounded: {remedy}",
        {"baseline_mean": float(baseline_mean)},
    )


def stand_in_warning(at_zero: bool, at_inf: bool, what: str = "mean") -> StatWarning:
    """Say that an end of the ratio's interval is a stand-in for 0 or +∞."""
    ends = []
    if at_zero:
        ends.append(f"down to −100% (the candidate's {what} is not clearly above zero)")
    if at_inf:
        ends.append(f"without an upper bound (the baseline's {what} is not clearly above zero)")
    return StatWarning(
        "ratio_unbounded",
        "at this level the ratio's interval reaches " + " and ".join(ends) + ": the bound shown "
        "there is the log-ratio interval's, and the verdict is the test's; add runs or reduce "
        "the noise for a bounded interval",
        {"at_zero": int(at_zero), "at_inf": int(at_inf)},
    )
