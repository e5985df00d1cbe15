"""Mann–Whitney test with the Hodges–Lehmann shift and the interval that inverts that test.

Assumption: the candidate's runs are the baseline's shifted by a constant (same shape);
nothing about that shape (no normality). Chosen for medians and for runs with wild
outliers or skew, where a mean is not the question or not stable: the estimate is the
median of all pairwise differences (candidate − baseline), its interval is the set of
shifts θ that the Mann–Whitney test of "candidate − θ vs baseline" does not reject, and
the p-value is that same test's at θ = 0 — interval and test always agree, at every level.

The change is defined as for every method (`intervals.py`); ranks do not change under
log, so the test is the same on every scale:
- ``ratio`` (the default when all runs are positive): the HL estimate on log values,
  the ratio c of a *scale* model (candidate = c × baseline), reported as c − 1: the
  relative change of the median and of every other quantile; never below −100%.
- ``shift``: the HL shift over |baseline median|, in the unit when the baseline median's
  own (order-statistic) interval contains 0. Dividing by an estimated median costs
  coverage when the change is large (simulated, 10% change, n = 30: 93% for a 95%
  interval) because the shift and the median share the baseline's noise; the ratio
  scale has no such term (94.3–97.2%). Used for data that are not all positive (compare()
  warns where the coverage is short); asked for on positive runs, it is replaced by the
  ratio where it would reach −100%.

Without ties: U's exact distribution for up to 50 runs per variant (else the normal
approximation with continuity correction, as scipy's asymptotic ``mannwhitneyu``), and
Moses' interval [D_(k), D_(nm+1−k)] with k read off the very p-values the test reports.
Its level is the smallest achievable at or above the requested one (``Comparison.
confidence`` keeps the requested one).

With ties (integer counts, coarse units): the normal approximation with tie correction
and continuity correction (scipy's asymptotic test, mid-ranks), inverted over the shifts
where the test can change — each distinct pairwise difference (a tie there), the middle
of each gap between them (no tie between the samples), and 0 itself. The interval spans
the shifts not rejected; the p-value is the smallest α at which that span excludes 0,
which is the test's own p-value at 0 (scipy's) whenever the p-values rise towards the
estimate and fall away from it, as they do. So "p ≤ 0.05 but the interval holds 0" cannot
happen: the old interval, two order statistics of the differences, could touch 0 at a tie
while the mid-rank test rejected. The ends are observed differences or midpoints between
them, a resolution of half a gap; on integer data the differences are the possible shifts.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray, IntArray, medians
from perflab.stats.batched import Batched
from perflab.stats.intervals import (
    ABSOLUTE,
    RATIO,
    RELATIVE,
    Intervals,
    add_note,
    as_batch,
    check_levels,
    finite_or_reason,
    note_warnings,
    positive_rows,
    pow2_scale,
    reconcile,
    scale_warning,
)
from perflab.stats.options import MANNWHITNEY_SCALES
from perflab.stats.records import made, replaced
from perflab.stats.summary import (
    Location,
    Summary,
    as_sample,
    as_samples,
    summarize,
    summarize_many,
)
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning
from perflab.stats.welch import COVERAGE_LOSS, implied_coverage

#: Largest run count per variant for which U's exact distribution is used.
EXACT_MAX_RUNS = 50


#: Relative tolerance under which two pairwise differences count as tied.
_TIE_TOL = 1e-12


@functools.lru_cache(maxsize=64)
def u_cdf(n: int, m: int) -> FloatArray:
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


def _exact_p(n: int, m: int, u_min: IntArray) -> FloatArray:
    """Exact two-sided p-value for the smaller tail count u_min = min(U, nm − U)."""
    p: FloatArray = np.minimum(1.0, 2 * u_cdf(n, m)[u_min])
    return p


def _exact_k(n: int, m: int, alpha: float) -> int:
    """k ≥ 1 such that [D_(k), D_(nm+1−k)] is the exact interval; 0 if none exists.

    k − 1 is the largest count j whose exact p-value (`_exact_p`, the one reported) is
    ≤ α, so the interval excludes 0 exactly when the test rejects.
    """
    p = _exact_p(n, m, np.arange(n * m // 2 + 1))
    return int(np.searchsorted(p, alpha, side="right"))


def _approx_p(u: FloatArray, nm: int, sd: FloatArray) -> FloatArray:
    """Normal-approximation two-sided p-value with continuity correction (scipy's)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.maximum(np.abs(u - nm / 2.0) - 0.5, 0.0) / sd
        p = np.minimum(1.0, 2 * special.ndtr(-z))
    return np.where(sd > 0, p, np.where(u == nm / 2.0, 1.0, 0.0))


def _tie_sum(values: FloatArray) -> float:
    _, counts = np.unique(values, return_counts=True)
    return float(((counts**3) - counts).sum())


def _untied(
    xa: FloatArray, xb: FloatArray, alpha: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, str]:
    """Rows without ties: (hl, low, high, p, kind) on the working scale; alpha (E,)."""
    e, n = xa.shape
    m = xb.shape[1]
    nm = n * m
    d = np.sort((xb[:, None, :] - xa[:, :, None]).reshape(e, nm), axis=1)
    hl = medians(d)
    u = (d > 0).sum(axis=1)
    u_min = np.minimum(u, nm - u)
    if max(n, m) <= EXACT_MAX_RUNS:
        p = _exact_p(n, m, u_min)
        grid = _exact_p(n, m, np.arange(nm // 2 + 1))
        kind = "exact"
    else:
        sd = math.sqrt(nm * (n + m + 1) / 12.0)
        p = _approx_p(u_min.astype(float), nm, np.full(e, sd))
        grid = _approx_p(np.arange(nm // 2 + 1, dtype=float), nm, np.full(nm // 2 + 1, sd))
        kind = "normal-approx"
    # k − 1: the largest count whose p-value (the one reported) is ≤ α
    k = np.searchsorted(grid, alpha, side="right")
    ok = k >= 1
    rows = np.arange(e)
    kk = np.clip(k, 1, nm)
    low = np.where(ok, d[rows, kk - 1], np.nan)
    high = np.where(ok, d[rows, nm - kk], np.nan)
    return hl, low, high, p, kind


def _tied_row(
    xa: FloatArray, xb: FloatArray, ra: FloatArray, rb: FloatArray, alpha: float
) -> tuple[float, float, float, float]:
    """One row with ties: (hl, low, high, p) on the working scale, by inverting the
    tie-corrected test over every cell of shifts (see the module docstring).

    xa, xb: working values (log or raw); ra, rb: the raw runs (ties are judged on them).
    """
    n, m = xa.size, xb.size
    nm, big_n = n * m, n + m
    d = (xb[None, :] - xa[:, None]).ravel()
    order = np.argsort(d, kind="stable")
    ds = d[order]
    tol = _TIE_TOL * max(float(np.max(np.abs(ds))), 1e-300)
    new = np.concatenate([[True], np.diff(ds) > tol])
    group_of_sorted = np.cumsum(new) - 1
    dv = ds[new]
    dv = np.where(np.abs(dv) <= tol, 0.0, dv)  # a tie at 0 is exactly 0
    g = dv.size
    cnt = np.bincount(group_of_sorted, minlength=g).astype(float)
    above = nm - np.cumsum(cnt)  # #{D > dv_g}
    group_of_pair = np.empty(nm, dtype=np.int64)
    group_of_pair[order] = group_of_sorted
    # Tie correction: within-sample ties everywhere; at a point dv_g also the groups of
    # baseline and candidate values that coincide once the candidate is shifted by dv_g.
    s0 = _tie_sum(ra) + _tie_sum(rb)
    _av, ia, ca = np.unique(ra, return_index=True, return_counts=True)
    _bv, ib, cb = np.unique(rb, return_index=True, return_counts=True)
    pair_group = group_of_pair[(ia[:, None] * m + ib[None, :]).ravel()]
    w = (3.0 * ca[:, None] * cb[None, :] * (ca[:, None] + cb[None, :])).ravel()
    t_point = s0 + np.bincount(pair_group, weights=w, minlength=g)

    def sd_of(t: NDArray[np.floating[Any]] | float) -> FloatArray:
        sd: FloatArray = np.sqrt(
            np.maximum(nm / 12.0 * ((big_n + 1) - t / (big_n * (big_n - 1))), 0.0)
        )
        return sd

    # Representative shifts: each distinct difference (a tie there, mid-ranks), the middle
    # of each gap between them and the two outer gaps (no between-sample tie), 0 itself,
    # and the HL estimate (the centre of the interval at every level).
    sd_gap = float(sd_of(s0))
    hl = float(np.median(d))
    u_zero = float(np.sum(d > tol) + 0.5 * np.sum(np.abs(d) <= tol))
    zero_is_point = bool(np.any(dv == 0.0))
    sd_zero = float(sd_of(t_point[dv == 0.0][0])) if zero_is_point else sd_gap
    reps = np.concatenate([dv, (dv[:-1] + dv[1:]) / 2, [-np.inf, np.inf, 0.0, hl]])
    u = np.concatenate([above + cnt / 2, above[:-1], [nm, 0.0, u_zero, nm / 2.0]])
    sd = np.concatenate([sd_of(t_point), np.full(g - 1, sd_gap), [sd_gap, sd_gap, sd_zero, 1.0]])
    p_reps = _approx_p(u, nm, sd)
    p_reps[-1] = 1.0
    ok = p_reps > alpha
    low, high = float(reps[ok].min()), float(reps[ok].max())
    if not (np.isfinite(low) and np.isfinite(high)):
        low = high = math.nan
    # The smallest α at which [low, high] excludes 0: no accepted shift on one side of it.
    p = min(float(p_reps[reps <= 0].max()), float(p_reps[reps >= 0].max()))
    return hl, low, high, p


def mannwhitney_batch(
    baseline: FloatArray,
    candidate: FloatArray,
    confidence: float | FloatArray = 0.95,
    scale: str = "auto",
) -> Intervals:
    """Hodges–Lehmann intervals and Mann–Whitney p-values for E comparisons.

    confidence: one level, or an (E,) array of one per row.

    estimate/low/high: the HL ratio − 1 (``ratio`` rows) or the HL shift over |baseline
    median| (``relative``) or in the unit (``absolute``). NaN interval when too few runs
    exist for any interval at this level (3 per variant at 95%).
    """
    if scale not in MANNWHITNEY_SCALES:
        raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(MANNWHITNEY_SCALES)})")
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    e, _n = a.shape
    confidence = check_levels(confidence, e)
    alpha = 1 - confidence
    positive = positive_rows(a, b)
    if scale == "ratio" and not positive.all():
        raise ValueError("scale='ratio' needs positive values")
    med_a, med_b = medians(a), medians(b)
    k = pow2_scale(a, b)
    use_log = positive if scale != "shift" else np.zeros(e, bool)
    est = np.full(e, np.nan)
    low = np.full(e, np.nan)
    high = np.full(e, np.nan)
    p = np.full(e, np.nan)
    kind = np.full(e, "exact", dtype=object)
    note = np.full(e, "", dtype=object)
    combined = np.sort(np.concatenate([a, b], axis=1), axis=1)
    tied = (np.diff(combined, axis=1) == 0).any(axis=1)

    def run(rows: BoolArray, log: bool) -> None:
        if not rows.any():
            return
        idx = np.flatnonzero(rows)
        xa = np.log(a[idx]) if log else a[idx] / k[idx, None]
        xb = np.log(b[idx]) if log else b[idx] / k[idx, None]
        plain = ~tied[idx]
        if plain.any():
            sel = idx[plain]
            hl, lo, hi, pp, kd = _untied(xa[plain], xb[plain], alpha[sel])
            est[sel], low[sel], high[sel], p[sel], kind[sel] = hl, lo, hi, pp, kd
        for r in np.flatnonzero(~plain):
            i = idx[r]
            est[i], low[i], high[i], p[i] = _tied_row(xa[r], xb[r], a[i], b[i], float(alpha[i]))
            kind[i] = "normal-approx"

    run(use_log, True)
    run(~use_log, False)
    out_scale = np.where(use_log, RATIO, RELATIVE).astype(object)
    # Shift rows: over |baseline median|, or in the unit when that median is within its own
    # noise of zero.
    near0 = _median_near_zero(a, ~use_log, confidence)
    out_scale[near0] = ABSOLUTE
    div = np.where(near0, 1.0, np.abs(med_a) / k)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(near0, k, 1.0)
        est = np.where(use_log, np.expm1(est), est / div * unit)
        low = np.where(use_log, np.expm1(low), low / div * unit)
        high = np.where(use_log, np.expm1(high), high / div * unit)
    # Asked for the shift on positive runs: where it reaches −100%, the ratio (same test).
    if scale == "shift":
        with np.errstate(invalid="ignore"):
            below = positive & (low <= -1)
        if below.any():
            r = mannwhitney_batch(a[below], b[below], confidence[below], "ratio")
            est[below], low[below], high[below], p[below] = r.estimate, r.low, r.high, r.p_value
            out_scale[below] = RATIO
            note = add_note(note, below, "below_minus_100")
    iv = Intervals(est, low, high, p, med_a, med_b, out_scale, kind, note)
    return reconcile(finite_or_reason(iv), confidence)


def _median_near_zero(a: FloatArray, rows: BoolArray, confidence: FloatArray) -> BoolArray:
    """Which of ``rows`` have a baseline median within its own noise of zero: its
    order-statistic interval (the range of the runs when too few for one) holds 0."""
    near0 = np.zeros(a.shape[0], bool)
    for i in np.flatnonzero(rows):
        lo_a, hi_a = median_interval(a[i], float(confidence[i]))
        if math.isnan(lo_a):
            lo_a, hi_a = float(a[i].min()), float(a[i].max())
        near0[i] = lo_a <= 0 <= hi_a
    return near0


def resolve_scale(scale: str, a: FloatArray, b: FloatArray) -> str:
    """``auto`` → ``ratio`` when every run is positive, else ``shift``."""
    if scale == "auto":
        return "ratio" if (np.all(a > 0) and np.all(b > 0)) else "shift"
    return scale


def median_interval(x: FloatArray, confidence: float) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (binomial); NaN if n too small."""
    s = np.sort(x)
    n = s.size
    alpha = 1 - confidence
    cdf = special.bdtr(np.arange(n + 1), n, 0.5)  # binomial CDF
    j = int(
        np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right")
    )  # largest j: P(B ≤ j−1) ≤ α/2
    if j < 1:
        return math.nan, math.nan
    return float(s[j - 1]), float(s[n - j])


class MannWhitney(Batched):
    """Hodges–Lehmann shift (or ratio) with the interval that inverts the Mann–Whitney test."""

    name = "mannwhitney"

    def __init__(self, scale: str = "auto"):
        if scale not in MANNWHITNEY_SCALES:
            raise ValueError(
                f"unknown scale {scale!r} (choose from {', '.join(MANNWHITNEY_SCALES)})"
            )
        self.scale = scale
        self.description = {
            "auto": "Hodges–Lehmann ratio (shift for non-positive data), Mann–Whitney test",
            "ratio": "Hodges–Lehmann ratio (on log values), Mann–Whitney test",
            "shift": "Hodges–Lehmann shift over the baseline median, Mann–Whitney test",
        }[scale]

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        """`summarize` plus the median's distribution-free (order-statistic) interval."""
        base = summarize(sample, confidence)
        x = as_sample(sample)
        lo, hi = median_interval(x, confidence)
        loc = Location("median", float(np.median(x)), lo, hi, confidence, "order-statistics")
        return dataclasses.replace(base, location=loc)

    def summary_many(
        self, samples: Sequence[Sequence[float]], confidence: float = 0.95
    ) -> list[Summary]:
        """`summary` of many samples, the same results: `summarize_many`, and the order
        statistics of the median's interval read once per sample size."""
        out = summarize_many(samples, confidence)
        arrays = as_samples(samples)
        by_size: dict[int, list[int]] = {}
        for i, x in enumerate(arrays):
            by_size.setdefault(x.size, []).append(i)
        for n, rows in by_size.items():
            cdf = special.bdtr(np.arange(n + 1), n, 0.5)
            j = int(np.searchsorted(cdf, (1 - confidence) / 2 * (1 + 1e-12), side="right"))
            x = np.sort(np.array([arrays[i] for i in rows]), axis=1)
            med = medians(x).tolist()
            lo = x[:, j - 1].tolist() if j >= 1 else [math.nan] * len(rows)
            hi = x[:, n - j].tolist() if j >= 1 else [math.nan] * len(rows)
            for r, i in enumerate(rows):
                loc = made(
                    Location,
                    {
                        "statistic": "median",
                        "value": med[r],
                        "low": lo[r],
                        "high": hi[r],
                        "confidence": confidence,
                        "interval": "order-statistics",
                    },
                )
                out[i] = replaced(out[i], location=loc)
        return out

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        return self._comparison(
            mannwhitney_batch(a, b, confidence, self.scale), 0, a, b, confidence
        )

    def _batch(self, a: FloatArray, b: FloatArray, lv: FloatArray) -> Intervals:
        return mannwhitney_batch(a, b, lv, self.scale)

    def _comparisons(
        self, res: Intervals, a: FloatArray, b: FloatArray, levels: list[float]
    ) -> list[Comparison]:
        """The rows of a batch result (the rows of blocks ``a`` and ``b``) as Comparisons."""
        return [self._comparison(res, i, a[i], b[i], lv) for i, lv in enumerate(levels)]

    def _comparison(
        self, res: Intervals, i: int, a: FloatArray, b: FloatArray, confidence: float
    ) -> Comparison:
        """Row ``i`` of a batch result as a Comparison, with the warnings it calls for."""
        scale = res.rows().scale[i]
        warnings: list[StatWarning] = []
        combined = np.concatenate([a, b])
        # Tied rows are never computed exactly (mannwhitney_batch): "exact" rows are untied.
        tied = res.rows().kind[i] != "exact" and np.unique(combined).size < combined.size
        if math.isnan(float(res.low[i])):
            need = next(k for k in range(2, 100) if _exact_k(k, k, 1 - confidence) >= 1)
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    f"a {confidence:.0%} Mann–Whitney interval needs ≥ {need} runs per "
                    f"variant (have {a.size} and {b.size}): add runs",
                    {"n_baseline": int(a.size), "n_candidate": int(b.size), "needed": need},
                )
            )
        else:
            if "below_minus_100" in res.notes(i):
                warnings.append(
                    StatWarning(
                        "interval_replaced",
                        "the shift over the baseline median would reach −100% or below, impossible for "
                        "positive runs: the Hodges–Lehmann ratio (the same test) is shown",
                        {},
                    )
                )
            elif scale == RELATIVE and a.size > 1 and b.size > 1:
                cov = implied_coverage(a, b, confidence)
                if cov < confidence - COVERAGE_LOSS:
                    warnings.append(
                        StatWarning(
                            "baseline_uncertainty",
                            "the change is large next to the baseline median's own uncertainty, "
                            f"which a shift over that median ignores: its real coverage is about "
                            f"{cov:.1%}, not {confidence:.0%}; "
                            + ("use scale = ratio" if np.all(combined > 0) else "add runs"),
                            {"implied_coverage": cov},
                        )
                    )
            w = scale_warning(scale, "median", {"baseline_median": float(res.baseline[i])})
            if w is not None:
                warnings.append(w)
            warnings += note_warnings(res, i)
        if tied:
            warnings.append(
                StatWarning(
                    "ties",
                    "tied values (a coarse unit?): the test and its interval use the normal "
                    "approximation with tie correction, read conservatively at a tie exactly at no "
                    "change; record the metric with more precision",
                    {"distinct": int(np.unique(combined).size), "n": int(combined.size)},
                )
            )
        return res.comparison(
            i,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic="hl-ratio" if scale == RATIO else "hl-shift",
            warnings=tuple(warnings),
        )
