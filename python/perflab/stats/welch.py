"""Welch's t interval for the difference of means, relative to the baseline mean.

Assumption: each sample's mean is approximately normal (runs independent, n not
tiny or the runs themselves near-normal); variances may differ. Chosen as the
default because benchmark runs of two variants rarely have equal variance, its
error rates hold for every run distribution simulated (normal, log-normal, t3,
bimodal; n = 5…30), it has the most power of the methods here, and it is what
seed 000's TLDR uses: CI(μ_b − μ_a) / mean(a).

Option ``interval="fieller"``: Fieller's interval for the ratio μ_b/μ_a, which also
accounts for the uncertainty of the baseline mean (the denominator); it matters when
the baseline is noisy relative to the change. Same p-value as the plain interval.

Default ``interval="auto"``: the difference interval, unless its implied coverage
(`implied_coverage`) falls more than COVERAGE_LOSS below the level — large changes
next to a noisy baseline, where it would under-cover (≈ 89% at +100%) and can even
reach below −100% — then Fieller's (when bounded). ``Comparison.interval`` says which.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

from perflab.stats.fieller import fieller_ratio, unbounded_warning
from perflab.stats.intervals import Intervals, as_batch, check_confidence
from perflab.stats.summary import Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning

INTERVALS = ("auto", "difference", "fieller")

#: Warn when the difference interval's implied coverage falls this far below its level.
COVERAGE_LOSS = 0.01


def implied_coverage(baseline: np.ndarray, candidate: np.ndarray, confidence: float) -> float:
    """Approximate actual coverage of the difference interval for the ratio of means.

    Dividing the difference's interval by the baseline mean ignores that the mean is
    estimated: the relative change's variance is (v_b + ρ²·v_a)/m_a², not
    (v_a + v_b)/m_a². With f² their ratio, the interval's t quantile is effectively t/f.
    (Simulated: a +10% change with equal noise gives f = 1.05 and ≈ 94% coverage; +100%
    gives ≈ 89%; Fieller's interval stays at 95%.)
    """
    a, b = baseline, candidate
    va = float(a.var(ddof=1)) / a.size
    vb = float(b.var(ddof=1)) / b.size
    if va + vb == 0 or a.mean() == 0:
        return confidence
    rho = float(b.mean() / a.mean())
    f = math.sqrt((vb + rho * rho * va) / (va + vb))
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    t = float(special.stdtrit(df, 0.5 + confidence / 2))
    return float(2 * special.stdtr(df, t / f) - 1)


def welch_batch(
    baseline: np.ndarray,
    candidate: np.ndarray,
    confidence: float = 0.95,
    interval: str = "difference",
) -> Intervals:
    """Welch intervals for E comparisons: ``baseline`` (E, n_a), ``candidate`` (E, n_b).

    Needs n_a, n_b ≥ 2 (NaN intervals otherwise). Where both samples are constant the
    difference is known exactly (zero-width interval).
    """
    if interval not in INTERVALS:
        raise ValueError(f"unknown Welch interval {interval!r} (choose from {', '.join(INTERVALS)})")
    confidence = check_confidence(confidence)
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    na, nb = a.shape[1], b.shape[1]
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    if np.any(ma == 0):
        raise ValueError("baseline mean is zero: a relative change is undefined")
    est = mb / ma - 1.0
    nan = np.full_like(ma, np.nan)
    if na < 2 or nb < 2:
        return Intervals(est, nan, nan.copy(), nan.copy(), ma, mb)
    va = a.var(axis=1, ddof=1) / na
    vb = b.var(axis=1, ddof=1) / nb
    diff = mb - ma
    q = 0.5 + confidence / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        if interval == "difference":
            se = np.sqrt(va + vb)
            df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
            t = special.stdtrit(df, q)
            low = (diff - t * se) / np.abs(ma)
            high = (diff + t * se) / np.abs(ma)
        else:
            rho = mb / ma
            # Satterthwaite degrees of freedom of mb − ρ·ma at the estimated ratio.
            df = (vb + rho**2 * va) ** 2 / (vb**2 / (nb - 1) + rho**4 * va**2 / (na - 1))
            t = special.stdtrit(df, q)
            r_low, r_high = fieller_ratio(mb, ma, vb, va, 0.0, t)
            low, high = r_low - 1.0, r_high - 1.0
            se = np.sqrt(va + vb)
        p = 2 * special.stdtr(df, -np.abs(diff) / se)
    exact = (va + vb) == 0  # both samples constant
    low = np.where(exact, est, low)
    high = np.where(exact, est, high)
    p = np.where(exact, np.where(diff == 0, 1.0, 0.0), p)
    return Intervals(est, low, high, p, ma, mb)


class Welch:
    """Welch's t interval (or Fieller's ratio interval) of the relative change of means."""

    name = "welch"
    description = "Welch's t interval of the difference of means, over the baseline mean"

    def __init__(self, interval: str = "auto"):
        if interval not in INTERVALS:
            raise ValueError(
                f"unknown Welch interval {interval!r} (choose from {', '.join(INTERVALS)})"
            )
        self.interval = interval
        if interval == "fieller":
            self.description = "Welch/Fieller interval of the ratio of means"

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return summarize(sample, confidence)

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        interval = self.interval
        if interval == "auto":
            # The difference interval unless the baseline mean's own uncertainty makes it
            # cover visibly less than its level; then Fieller's, which does not (if bounded).
            interval = "difference"
            if a.size >= 2 and b.size >= 2 and \
                    implied_coverage(a, b, confidence) < confidence - COVERAGE_LOSS:
                fl = welch_batch(a, b, confidence, "fieller")
                if not math.isnan(float(fl.low[0])):
                    interval = "fieller"
        res = welch_batch(a, b, confidence, interval)
        warnings: list[StatWarning] = []
        if a.size < 2 or b.size < 2:
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    "need ≥ 2 runs per variant for an interval (≥ 5 for a trustworthy one)",
                    {"n_baseline": int(a.size), "n_candidate": int(b.size)},
                )
            )
        elif interval == "difference" and res.low[0] != res.high[0]:
            cov = implied_coverage(a, b, confidence)
            if cov < confidence - COVERAGE_LOSS:
                fl = welch_batch(a, b, confidence, "fieller")
                fieller = (f"Fieller's ratio interval, [{float(fl.low[0]):+.2%}, {float(fl.high[0]):+.2%}], "
                           "accounts for it (interval = fieller)") if not math.isnan(float(fl.low[0])) else \
                    ("Fieller's ratio interval, which accounts for it, is unbounded here: the baseline "
                     "mean is not clearly away from zero; add runs or reduce its noise")
                warnings.append(
                    StatWarning(
                        "baseline_uncertainty",
                        f"the change is large next to the baseline mean's own uncertainty, which "
                        f"this interval ignores: its real coverage is about {cov:.1%}, not "
                        f"{confidence:.0%}; {fieller}",
                        {"implied_coverage": cov, "fieller_low": float(fl.low[0]),
                         "fieller_high": float(fl.high[0])},
                    )
                )
        elif interval == "fieller" and math.isnan(float(res.low[0])):
            warnings.append(unbounded_warning(res.baseline[0], "add runs or use interval='difference'"))
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic="mean",
            interval=interval,
            warnings=tuple(warnings),
        )
