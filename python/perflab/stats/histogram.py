"""Bootstrap of a latency percentile for metrics stored as per-run histograms.

Assumption: runs are independent and each run's histogram is one draw of the system's
behaviour; requests within a run are *not* independent (they share the run's state),
so the unit that is resampled is the run, never the request. For each resample the
chosen runs' histograms are merged exactly (counts added bucket by bucket, as
HdrHistogram does) and the percentile recomputed from the merged counts; the interval
of the relative change is BCa with the small-sample expansion of `bca.py` (the run-
to-run spread of each run's own percentile sets its weights).

Inputs per variant: ``counts`` of shape (runs, K) over ``values`` of shape (K,), the
common bucket values (ascending; e.g. HdrHistogram's highest-equivalent value of each
bucket). The percentile is HdrHistogram's: the smallest bucket value at or below which
at least ⌈p/100·total⌉ of the requests lie.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats import special
from perflab.stats.arrays import FloatArray
from perflab.stats.bca import bca_interval, expanded_z, pooled_shape_acceleration
from perflab.stats.intervals import (
    ABSOLUTE,
    RATIO,
    RELATIVE,
    Intervals,
    check_confidence,
    finite_or_reason,
    note_warnings,
    pow2_scale,
    reconcile,
    scale_warning,
)
from perflab.stats.options import DEFAULT_RESAMPLES
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning

#: Fewest runs per variant for an interval (validated by simulation at 99th percentile).
MIN_RUNS = 5


def _as_histograms(
    values: ArrayLike, counts: ArrayLike, name: str
) -> tuple[FloatArray, FloatArray]:
    v = np.array(values, dtype=np.float64, copy=True).ravel()
    c = np.array(counts, dtype=np.float64, copy=True)
    if c.ndim == 1:
        c = c[None, :]
    if c.ndim != 2 or c.shape[1] != v.size or v.size == 0:
        raise ValueError(
            f"{name}: counts must have shape (runs, {v.size}) to match the bucket values"
        )
    if not np.all(np.isfinite(v)) or np.any(np.diff(v) <= 0):
        raise ValueError("bucket values must be finite and strictly increasing")
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError(f"{name}: counts must be finite and ≥ 0")
    if np.any(c.sum(axis=1) == 0):
        raise ValueError(f"{name}: a run's histogram is empty")
    return v, c


def merged_percentile(
    values: Sequence[float] | FloatArray, counts: ArrayLike, percentile: float
) -> FloatArray:
    """Percentile (0 < p ≤ 100) of the histograms in ``counts`` (…, K), merged along no axis.

    Each row of ``counts`` is one (already merged) histogram; returns one value per row.
    """
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    cum = np.cumsum(c, axis=-1)
    total = cum[..., -1:]
    target = np.maximum(np.ceil(percentile / 100.0 * total - 1e-9), 1.0)
    idx = np.argmax(cum >= target, axis=-1)
    at: FloatArray = v[idx]
    return at


def _weighted_percentile(
    values: FloatArray, cum: FloatArray, w: FloatArray, percentile: float
) -> FloatArray:
    """Percentile of Σ_i w[r, i]·hist_i for each resample r, by binary search over buckets.

    cum: per-run cumulative counts (n, K); w: resample weights (B, n). Merged cumulative
    counts are linear in the weights, so each search step costs O(B·n), not O(B·K).
    """
    b = w.shape[0]
    k = cum.shape[1]
    total = w @ cum[:, -1]
    target = np.maximum(np.ceil(percentile / 100.0 * total - 1e-9), 1.0)
    lo = np.zeros(b, dtype=np.int64)
    hi = np.full(b, k - 1, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        reached = np.einsum("bn,nb->b", w, cum[:, mid]) >= target
        hi = np.where(reached, mid, hi)
        lo = np.where(reached, lo, mid + 1)
    return values[lo]


def histogram_bootstrap(
    values: Sequence[float] | FloatArray,
    baseline_counts: ArrayLike,
    candidate_counts: ArrayLike,
    percentile: float = 99.0,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | np.random.Generator = 0,
) -> Intervals:
    """One-row `Intervals` of the change of the merged-histogram percentile: the ratio
    p(candidate)/p(baseline) − 1 when every bucket value holding requests is positive
    (read on the log scale: never below −100%), else the difference over |p(baseline)|, or
    in the unit when p(baseline) is within its own bootstrap noise of zero."""
    confidence = check_confidence(confidence)
    if not 0 < percentile <= 100:
        raise ValueError("percentile must lie in (0, 100]")
    v, ca = _as_histograms(values, baseline_counts, "baseline")
    _, cb = _as_histograms(values, candidate_counts, "candidate")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    na, nb = ca.shape[0], cb.shape[0]
    # Only buckets holding requests can carry a percentile: drop the empty ones.
    keep = (ca.sum(axis=0) + cb.sum(axis=0)) > 0
    v, ca, cb = v[keep], ca[:, keep], cb[:, keep]
    positive = bool(v[0] > 0)  # every value a percentile can take is positive: a ratio
    k = float(pow2_scale(np.abs(v)[None, :])[0])
    v = v / k
    pa = float(merged_percentile(v, ca.sum(axis=0), percentile))
    pb = float(merged_percentile(v, cb.sum(axis=0), percentile))
    kind = np.array(["bca"], dtype=object)
    scale = np.array([RATIO if positive else RELATIVE], dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.array([(pb - pa) / abs(pa)])
    if min(na, nb) < MIN_RUNS:
        nan = np.array([np.nan])
        if not positive and pa == 0:
            scale[0] = ABSOLUTE
            est = np.array([(pb - pa) * k])
        return Intervals(
            est, nan, nan.copy(), nan.copy(), np.array([pa * k]), np.array([pb * k]), scale, kind
        )

    ra = _resampled(v, ca, percentile, resamples, rng)
    rb = _resampled(v, cb, percentile, resamples, rng)
    est_w, work, accel = _working_scale(v, (ca, cb), (pa, pb), (ra, rb), percentile, positive)
    wa = _expansion_weight(v, ca, percentile, positive)
    wb = _expansion_weight(v, cb, percentile, positive)
    z, c, df = expanded_z(confidence, wa, wb, na, nb)
    low, high, z_null = bca_interval(est_w, work, accel, z)
    p = np.minimum(1.0, 2 * special.stdtr(df, -np.abs(z_null) / c))
    # the estimate always inside (see bootstrap.py)
    opposite = ((z_null < 0) & (est_w <= 0)) | ((z_null > 0) & (est_w >= 0))
    p = np.where(opposite, 1.0, p)
    low, high = np.minimum(low, est_w), np.maximum(high, est_w)
    if positive:
        low, high = np.expm1(low), np.expm1(high)
    else:
        alpha = 1 - confidence
        qa = np.quantile(ra, [alpha / 2, 1 - alpha / 2])
        if qa[0] <= 0 <= qa[1]:
            scale[0] = ABSOLUTE
            est, low, high = est_w * k, low * k, high * k
        else:
            low, high = low / abs(pa), high / abs(pa)
    iv = Intervals(est, low, high, p, np.array([pa * k]), np.array([pb * k]), scale, kind)
    return reconcile(finite_or_reason(iv), confidence)


def _resampled(
    v: FloatArray, c: FloatArray, percentile: float, resamples: int, rng: np.random.Generator
) -> FloatArray:
    """The percentile of ``resamples`` bootstrap resamples of the runs (rows of ``c``)."""
    n = c.shape[0]
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)
    return _weighted_percentile(v, np.cumsum(c, axis=1), w, percentile)


def _jackknife(v: FloatArray, c: FloatArray, percentile: float) -> FloatArray:
    """The percentile with each run (row of ``c``) left out in turn."""
    return merged_percentile(v, c.sum(axis=0)[None, :] - c, percentile)


def _working_scale(
    v: FloatArray,
    counts: tuple[FloatArray, FloatArray],
    percentiles: tuple[float, float],
    resampled: tuple[FloatArray, FloatArray],
    percentile: float,
    positive: bool,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The change on the scale the BCa interval is built on (the log ratio, or the
    difference): (its estimate, its bootstrap replicates, the acceleration)."""
    (ca, cb), (pa, pb), (ra, rb) = counts, percentiles, resampled
    with np.errstate(divide="ignore", invalid="ignore"):
        if positive:
            work = (np.log(rb) - np.log(ra))[None, :]
            est_w = np.array([np.log(pb) - np.log(pa)])
            ja = pb / _jackknife(v, ca, percentile)[None, :] - 1.0
            jb = _jackknife(v, cb, percentile)[None, :] / pa - 1.0
        else:
            work = (rb - ra)[None, :]
            est_w = np.array([pb - pa])
            ja = pb - _jackknife(v, ca, percentile)[None, :]
            jb = _jackknife(v, cb, percentile)[None, :] - pa
    return est_w, work, pooled_shape_acceleration(ja, jb)


def _expansion_weight(
    v: FloatArray, c: FloatArray, percentile: float, positive: bool
) -> FloatArray:
    """One side's weight in the small-sample expansion: the spread of each run's own
    percentile (relative, for a ratio)."""
    per = merged_percentile(v, c, percentile)
    norm = per.mean() ** 2 if positive else 1.0
    return np.array([per.var(ddof=1) / (c.shape[0] * norm)])


class HistogramBootstrap:
    """Bootstrap over runs of a merged-histogram percentile (latency metrics)."""

    name = "histogram-bootstrap"

    def __init__(self, percentile: float = 99.0, resamples: int = DEFAULT_RESAMPLES, seed: int = 0):
        if not 0 < percentile <= 100:
            raise ValueError("percentile must lie in (0, 100]")
        self.percentile = float(percentile)
        self.resamples = int(resamples)
        self.seed = int(seed)
        self.description = (
            f"bootstrap over runs of the merged-histogram p{self.percentile:g} "
            f"({self.resamples} resamples, seed {self.seed})"
        )

    def compare(
        self,
        values: Sequence[float] | FloatArray,
        baseline_counts: ArrayLike,
        candidate_counts: ArrayLike,
        confidence: float = 0.95,
    ) -> Comparison:
        res = histogram_bootstrap(
            values,
            baseline_counts,
            candidate_counts,
            self.percentile,
            confidence,
            self.resamples,
            self.seed,
        )
        na = int(np.atleast_2d(np.asarray(baseline_counts)).shape[0])
        nb = int(np.atleast_2d(np.asarray(candidate_counts)).shape[0])
        warnings: tuple[StatWarning, ...] = ()
        if min(na, nb) < MIN_RUNS:
            warnings = (
                StatWarning(
                    "too_few_runs",
                    f"a bootstrap over runs needs ≥ {MIN_RUNS} runs per variant (have {na} "
                    f"and {nb}): add runs",
                    {"n_baseline": na, "n_candidate": nb, "needed": MIN_RUNS},
                ),
            )
        else:
            w = scale_warning(
                str(res.scale[0]), f"p{self.percentile:g}", {"baseline": float(res.baseline[0])}
            )
            warnings = ((w,) if w is not None else ()) + tuple(note_warnings(res, 0))
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=na,
            n_candidate=nb,
            statistic=f"p{self.percentile:g}",
            interval="bca",
            warnings=warnings,
        )
