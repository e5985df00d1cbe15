"""Descriptive summary of one sample (the lookup-structure experiment's table:
avg/min/max/stddev/margin of error)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray, Values, medians
from perflab.stats.records import made
from perflab.stats.warnings import StatWarning

#: The fewest runs for which a 95% t interval is worth printing without a warning.
MIN_RUNS_FOR_INTERVAL = 5


@dataclass(frozen=True)
class Location:
    """A location statistic of one sample with its interval, in the metric's unit.

    statistic: ``"mean"``, ``"median"``, ``"p90"``…; value: its sample value;
    low/high: its ``confidence`` interval (NaN when it cannot be computed);
    interval: how it was built (``"t"``, ``"bca"``, ``"order-statistics"``).
    """

    statistic: str
    value: float
    low: float
    high: float
    confidence: float
    interval: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "interval": self.interval,
        }


@dataclass(frozen=True)
class Summary:
    """Summary of n ≥ 1 finite observations, all in the metric's own unit.

    stddev:          sample standard deviation (ddof=1); NaN when n < 2.
    margin_of_error: z·sd/√n with z = Φ⁻¹(1 − α/2) (1.96 at 95%), as in the
                     lookup-structure experiment; NaN when n < 2.
    ci_low/ci_high:  Student-t interval of the mean at ``confidence``; NaN when n < 2.
    location:        the method's own location statistic with its interval (the mean's t
                     interval for Welch, BCa for the bootstrap, the median's distribution-free
                     interval for Mann–Whitney).
    """

    n: int
    mean: float
    median: float
    stddev: float
    min: float
    max: float
    margin_of_error: float
    ci_low: float
    ci_high: float
    confidence: float
    warnings: tuple[StatWarning, ...] = field(default=())
    location: Location | None = None

    @property
    def cv(self) -> float:
        """Coefficient of variation (stddev / |mean|), a fraction; NaN if undefined."""
        if self.n < 2 or self.mean == 0:
            return math.nan
        return self.stddev / abs(self.mean)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "median": self.median,
            "stddev": self.stddev,
            "min": self.min,
            "max": self.max,
            "margin_of_error": self.margin_of_error,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "confidence": self.confidence,
            "warnings": [w.to_dict() for w in self.warnings],
            "location": self.location.to_dict() if self.location else None,
        }


def as_sample(values: Values) -> FloatArray:
    """A float64 copy of ``values`` (never a view: callers' arrays are not mutated)."""
    arr = np.array(values, dtype=np.float64, copy=True).ravel()
    if arr.size == 0:
        raise ValueError("empty sample")
    if not np.isfinite(arr).all():
        raise ValueError("sample contains NaN or infinite values")
    return arr


def as_samples(samples: Sequence[Values]) -> list[FloatArray]:
    """`as_sample` of each sample, the same arrays (and the same error, if any): samples of
    equal length converted and checked in one call each (tables of thousands of cells)."""
    by_size: dict[int, list[int]] = {}
    rows: dict[int, FloatArray] = {}
    try:
        sizes = {len(v) for v in samples}
    except TypeError:  # not samples: as_sample says why
        return [as_sample(v) for v in samples]
    if len(sizes) == 1 and 0 not in sizes:  # one size (most tables): one block, no grouping
        block = one_block(samples)
        return list(block) if block is not None else [as_sample(v) for v in samples]
    try:
        for i, v in enumerate(samples):
            by_size.setdefault(len(v), []).append(i)
        for n, idx in by_size.items():
            block = np.array([samples[i] for i in idx], dtype=np.float64)
            if n == 0 or block.shape != (len(idx), n) or not np.isfinite(block).all():
                raise ValueError("not plain 1-D samples of finite values")
            rows.update(zip(idx, block))
    except (TypeError, ValueError):  # as_sample, one by one, says what is wrong (if anything)
        return [as_sample(v) for v in samples]
    return [rows[i] for i in range(len(samples))]


def scaled(x: FloatArray) -> tuple[float, FloatArray]:
    """(k, x/k) with k a power of two near max|x| (1 if all zero): exact, and keeps sums of
    squares of values from 1e-300 to 1e300 away from overflow and underflow."""
    top = float(np.max(np.abs(x))) if x.size else 0.0
    k = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 else 1.0
    return k, x / k


def summarize(values: Values, confidence: float = 0.95) -> Summary:
    """Summary of a sample; warns when it has too few runs for an interval."""
    x = as_sample(values)
    n = int(x.size)
    k, xs = scaled(x)
    mean = k * float(np.mean(xs))
    warnings: list[StatWarning] = []
    if n >= 2:
        sd = k * float(np.std(xs, ddof=1))
        # scipy.special directly: the same functions scipy.stats wraps, ~50x cheaper per call
        z = float(special.ndtri(0.5 + confidence / 2))
        t = float(special.stdtrit(n - 1, 0.5 + confidence / 2))
        moe = z * sd / math.sqrt(n)
        half = t * sd / math.sqrt(n)
        lo, hi = mean - half, mean + half
    else:
        sd = moe = lo = hi = math.nan
    if n < MIN_RUNS_FOR_INTERVAL:
        warnings.append(
            StatWarning(
                "too_few_runs",
                f"only {n} run(s): need ≥ {MIN_RUNS_FOR_INTERVAL} runs for a trustworthy "
                f"{confidence:.0%} interval",
                {"n": n, "needed": MIN_RUNS_FOR_INTERVAL},
            )
        )
    return Summary(
        n=n,
        mean=mean,
        median=float(np.median(x)),
        stddev=sd,
        min=float(np.min(x)),
        max=float(np.max(x)),
        margin_of_error=moe,
        ci_low=lo,
        ci_high=hi,
        confidence=confidence,
        warnings=tuple(warnings),
        location=Location("mean", mean, lo, hi, confidence, "t"),
    )


def summarize_many(samples: Sequence[Values], confidence: float = 0.95) -> list[Summary]:
    """`summarize` of many samples, the same results: samples of equal size are summarized
    in one vectorized pass (thousands of cells cost milliseconds, not a call each)."""
    q = 0.5 + confidence / 2
    z = float(special.ndtri(q))
    block = one_block(samples)
    if block is not None and block.shape[1] >= MIN_RUNS_FOR_INTERVAL:  # one size (most tables):
        return _summaries_of_block(block, confidence, q, z)  # the block as it is, no regrouping
    arrays = as_samples(samples)
    out: list[Summary | None] = [None] * len(arrays)
    groups: dict[int, list[int]] = {}
    for i, x in enumerate(arrays):
        groups.setdefault(x.size, []).append(i)
    for n, rows in groups.items():
        if n < MIN_RUNS_FOR_INTERVAL:  # rare: the warning and NaNs are summarize's business
            for i in rows:
                out[i] = summarize(arrays[i], confidence)
            continue
        made_rows = _summaries_of_block(np.array([arrays[i] for i in rows]), confidence, q, z)
        for i, summary in zip(rows, made_rows):
            out[i] = summary
    return [s for s in out if s is not None]


def one_block(samples: Sequence[Values]) -> FloatArray | None:
    """The samples as one (E, n) float64 block when they all have one size n ≥ 1 and are
    finite numbers; None otherwise (`as_samples` then says what is wrong, if anything)."""
    try:
        if isinstance(samples, np.ndarray):  # (a block already: its rows are the samples)
            block = samples.astype(np.float64, copy=False)
        elif len({len(v) for v in samples}) != 1:
            return None
        else:
            block = np.array(samples, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if block.ndim != 2 or block.shape[1] == 0 or not np.isfinite(block).all():
        return None
    return block


def _summaries_of_block(x: FloatArray, confidence: float, q: float, z: float) -> list[Summary]:
    """The summaries of the rows of an (E, n) block, n ≥ `MIN_RUNS_FOR_INTERVAL`."""
    n = x.shape[1]
    top = np.max(np.abs(x), axis=1)
    k = np.where(top > 0, np.ldexp(1.0, np.frexp(top)[1]), 1.0)
    xs = x / k[:, None]
    mean = k * np.mean(xs, axis=1)
    sd = k * np.std(xs, axis=1, ddof=1)
    t = float(special.stdtrit(n - 1, q))
    moe, half = z * sd / math.sqrt(n), t * sd / math.sqrt(n)
    med, lo_x, hi_x = medians(x), np.min(x, axis=1), np.max(x, axis=1)
    columns = zip(
        mean.tolist(),
        half.tolist(),
        med.tolist(),
        sd.tolist(),
        lo_x.tolist(),
        hi_x.tolist(),
        moe.tolist(),
    )
    return [
        made(
            Summary,
            {
                "n": n,
                "mean": m,
                "median": md,
                "stddev": s,
                "min": lo,
                "max": hi,
                "margin_of_error": e,
                "ci_low": m - h,
                "ci_high": m + h,
                "confidence": confidence,
                "warnings": (),
                "location": made(
                    Location,
                    {
                        "statistic": "mean",
                        "value": m,
                        "low": m - h,
                        "high": m + h,
                        "confidence": confidence,
                        "interval": "t",
                    },
                ),
            },
        )
        for m, h, md, s, lo, hi, e in columns
    ]
