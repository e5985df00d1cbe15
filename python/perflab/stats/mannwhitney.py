"""Mann–Whitney test with the Hodges–Lehmann shift and its distribution-free interval.

Assumption: the candidate's runs are the baseline's shifted by a constant (same shape);
nothing about that shape (no normality). Chosen for medians and for runs with wild
outliers or skew, where a mean is not the question or not stable: the estimate is the
median of all pairwise differences (candidate − baseline), its interval comes from the
exact null distribution of the rank statistic U (Moses' method), and the p-value is
the Mann–Whitney test's — interval and test always agree.

Two scales, same test (ranks do not change under log):
- ``ratio`` (the default when all runs are positive): the HL estimate on log values,
  the ratio c of a *scale* model (candidate = c × baseline), reported as c − 1: the
  relative change of the median and of every other quantile.
- ``shift``: the HL shift over the baseline median. Dividing by an estimated median
  costs coverage when the change is large (simulated, 10% change, n = 30: 93% for a
  95% interval) because the shift and the median share the baseline's noise; the ratio
  scale has no such term (94.3–97.2%). Used for data that are not all positive, and
  then compare() warns where the coverage is short.

Exact distribution for up to 50 runs per variant without ties; otherwise the normal
approximation with tie correction and continuity correction (as scipy's asymptotic
``mannwhitneyu``). Intervals are conservative by the discreteness of U: their actual
level (``Comparison.confidence`` keeps the requested one) is the smallest achievable
at or above the requested level.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np
from scipy import special
from scipy import stats as sps

from perflab.stats.intervals import Intervals, as_batch, check_confidence
from perflab.stats.summary import Location, Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning
from perflab.stats.welch import COVERAGE_LOSS, implied_coverage

#: Largest run count per variant for which U's exact distribution is used.
EXACT_MAX_RUNS = 50

SCALES = ("auto", "ratio", "shift")


@functools.lru_cache(maxsize=64)
def u_cdf(n: int, m: int) -> np.ndarray:
    """P(U ≤ u) for u = 0…n·m under the null, U = #{(i, j): x_i > y_j}, |x| = n, |y| = m.

    scipy exposes exact p-values but not U's distribution, which the interval needs
    (its critical value), hence this recurrence on the last element of the merged
    order: p(n, m, u) = n/(n+m)·p(n−1, m, u−m) + m/(n+m)·p(n, m−1, u).
    """
    # prev[j] holds the pmf for (i − 1, j); row[j] for (i, j).
    prev = [np.ones(1) for _ in range(m + 1)]  # i = 0: U = 0 surely
    for i in range(1, n + 1):
        row = [np.ones(1)]  # j = 0: U = 0 surely
        for j in range(1, m + 1):
            pmf = np.zeros(i * j + 1)
            pmf[j : j + prev[j].size] += i / (i + j) * prev[j]
            pmf[: row[j - 1].size] += j / (i + j) * row[j - 1]
            row.append(pmf)
        prev = row
    return np.minimum(np.cumsum(prev[m]), 1.0)


def _exact_k(n: int, m: int, alpha: float) -> int:
    """k ≥ 1 such that [D_(k), D_(nm+1−k)] is the exact interval; 0 if none exists."""
    cdf = u_cdf(n, m)
    # largest k with P(U ≤ k − 1) ≤ α/2
    return int(np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right"))


def mannwhitney_batch(
    baseline: np.ndarray,
    candidate: np.ndarray,
    confidence: float = 0.95,
    scale: str = "auto",
) -> Intervals:
    """Hodges–Lehmann intervals and Mann–Whitney p-values for E comparisons.

    estimate/low/high: HL shift and its bounds over the baseline median (``shift``), or
    the HL ratio − 1 (``ratio``). NaN interval when too few runs exist for any interval
    at this level (3 per variant at 95%).
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(SCALES)})")
    confidence = check_confidence(confidence)
    alpha = 1 - confidence
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    e, n = a.shape
    m = b.shape[1]
    med_a, med_b = np.median(a, axis=1), np.median(b, axis=1)
    scale = resolve_scale(scale, a, b)
    if scale == "ratio":
        if np.any(a <= 0) or np.any(b <= 0):
            raise ValueError("scale='ratio' needs positive values")
        xa, xb = np.log(a), np.log(b)
    else:
        if np.any(med_a == 0):
            raise ValueError("baseline median is zero: a relative change is undefined")
        xa, xb = a, b
    d = np.sort((xb[:, None, :] - xa[:, :, None]).reshape(e, n * m), axis=1)
    hl = np.median(d, axis=1)
    nm = n * m
    u = (d > 0).sum(axis=1) + 0.5 * (d == 0).sum(axis=1)  # pairs with candidate > baseline

    combined = np.sort(np.concatenate([xa, xb], axis=1), axis=1)
    tied = (np.diff(combined, axis=1) == 0).any(axis=1)
    use_exact = ~tied & (max(n, m) <= EXACT_MAX_RUNS)

    k = np.zeros(e, dtype=np.int64)
    p = np.empty(e)
    if use_exact.any():
        cdf = u_cdf(n, m)
        k_exact = _exact_k(n, m, alpha)
        ui = np.rint(u[use_exact]).astype(np.int64)
        lower = cdf[np.minimum(ui, nm - ui)]  # U is symmetric: P(U ≥ u) = P(U ≤ nm − u)
        p[use_exact] = np.minimum(1.0, 2 * lower)
        k[use_exact] = k_exact
    approx = ~use_exact
    if approx.any():
        nn = n + m
        # tie correction per row: Σ (t³ − t) over groups of equal values
        ties_term = np.zeros(e)
        for r in np.flatnonzero(approx & tied):
            _, counts = np.unique(combined[r], return_counts=True)
            ties_term[r] = float(((counts**3) - counts).sum())
        var_u = nm / 12.0 * ((nn + 1) - ties_term / (nn * (nn - 1)))
        sd_u = np.sqrt(var_u)
        dev = np.abs(u - nm / 2.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.maximum(dev - 0.5, 0.0) / sd_u
        p_ap = np.where(sd_u > 0, np.minimum(1.0, 2 * special.ndtr(-z)), 1.0)
        zc = special.ndtri(1 - alpha / 2)
        k_ap = np.floor(nm / 2.0 - zc * sd_u - 0.5).astype(np.int64) + 1
        p[approx] = p_ap[approx]
        k[approx] = np.maximum(k_ap[approx], 0)

    ok = k >= 1
    kk = np.clip(k, 1, nm)
    rows = np.arange(e)
    d_low = np.where(ok, d[rows, kk - 1], np.nan)
    d_high = np.where(ok, d[rows, nm - kk], np.nan)
    if scale == "ratio":
        est, low, high = np.expm1(hl), np.expm1(d_low), np.expm1(d_high)
    else:
        scl = np.abs(med_a)
        est, low, high = hl / scl, d_low / scl, d_high / scl
    return Intervals(est, low, high, p, med_a, med_b)


def resolve_scale(scale: str, a: np.ndarray, b: np.ndarray) -> str:
    """``auto`` → ``ratio`` when every run is positive, else ``shift``."""
    if scale == "auto":
        return "ratio" if (np.all(a > 0) and np.all(b > 0)) else "shift"
    return scale


def median_interval(x: np.ndarray, confidence: float) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (binomial); NaN if n too small."""
    s = np.sort(x)
    n = s.size
    alpha = 1 - confidence
    cdf = sps.binom.cdf(np.arange(n + 1), n, 0.5)
    j = int(np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right"))  # largest j: P(B ≤ j−1) ≤ α/2
    if j < 1:
        return math.nan, math.nan
    return float(s[j - 1]), float(s[n - j])


class MannWhitney:
    """Hodges–Lehmann shift (or ratio) with its exact interval and the Mann–Whitney p-value."""

    name = "mannwhitney"

    def __init__(self, scale: str = "auto"):
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(SCALES)})")
        self.scale = scale
        self.description = {
            "auto": "Hodges–Lehmann ratio (shift for non-positive data), Mann–Whitney test",
            "ratio": "Hodges–Lehmann ratio (on log values), Mann–Whitney test",
            "shift": "Hodges–Lehmann shift over the baseline median, Mann–Whitney test",
        }[scale]

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        """`summarize` plus the median's distribution-free (order-statistic) interval."""
        import dataclasses

        base = summarize(sample, confidence)
        x = as_sample(sample)
        lo, hi = median_interval(x, confidence)
        loc = Location("median", float(np.median(x)), lo, hi, confidence, "order-statistics")
        return dataclasses.replace(base, location=loc)

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        scale = resolve_scale(self.scale, a, b)
        res = mannwhitney_batch(a, b, confidence, scale)
        warnings: list[StatWarning] = []
        if math.isnan(float(res.low[0])):
            need = next(
                k for k in range(2, 100) if _exact_k(k, k, 1 - confidence) >= 1
            )
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    f"a {confidence:.0%} Mann–Whitney interval needs ≥ {need} runs per "
                    f"variant (have {a.size} and {b.size}): add runs",
                    {"n_baseline": int(a.size), "n_candidate": int(b.size), "needed": need},
                )
            )
        elif scale == "shift" and a.size > 1 and b.size > 1:
            cov = implied_coverage(a, b, confidence)
            if cov < confidence - COVERAGE_LOSS:
                warnings.append(
                    StatWarning(
                        "baseline_uncertainty",
                        "the change is large next to the baseline median's own uncertainty, "
                        f"which a shift over that median ignores: its real coverage is about "
                        f"{cov:.1%}, not {confidence:.0%}; use scale = ratio",
                        {"implied_coverage": cov},
                    )
                )
        combined = np.concatenate([a, b])
        tied = np.unique(combined).size < combined.size
        if tied:
            warnings.append(
                StatWarning(
                    "ties",
                    "tied values (a coarse unit?): the interval and p-value use the normal "
                    "approximation with tie correction; record the metric with more precision",
                    {"distinct": int(np.unique(combined).size), "n": int(combined.size)},
                )
            )
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic="hl-shift" if scale == "shift" else "hl-ratio",
            interval="normal-approx" if tied or max(a.size, b.size) > EXACT_MAX_RUNS else "exact",
            warnings=tuple(warnings),
        )
