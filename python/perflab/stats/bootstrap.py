"""BCa bootstrap interval of the relative change of any location statistic.

Assumption: the runs of each variant are independent draws from one distribution;
nothing about its shape. Chosen when the question is about a statistic other than the
mean (the median run, the 90th-percentile run) or when runs are skewed enough that a
t interval is in doubt. Runs of each variant are resampled independently; the change
is recomputed per resample — as defined for every method (`intervals.py`): the ratio
candidate/baseline for positive runs (read on the log scale, so no bound reaches −100%),
else the difference over |baseline statistic| or, when that statistic is within its own
bootstrap noise of zero, in the unit; the interval is
BCa (corrects bias and skew) with the small-sample expansion of `bca.py`, which keeps
coverage near nominal from n = 5 runs for the mean; where a few runs make the bootstrap
distribution lopsided the interval of a mean is widened to also cover the symmetric
bootstrap-SE interval (see `_lopsided_guard`), which keeps heavy-tailed runs at the
nominal error rate.

Protection: a bootstrap cannot say more than the runs contain. Below `min_runs`
(5 for the mean, more for a median or percentile, which need runs on both sides of
them) the interval is refused (NaN, with a warning saying how many runs are needed).
Seeded: the same inputs and seed give the same interval. The p-value is the level at
which the interval's end reaches zero (so it agrees with the interval at every level),
read off the same quantile function; beyond the outermost resamples that function has
normal tails (`bca._Quantiles`), so small p-values are resolved — not floored near
1/resamples — and a multiple-comparison correction (Holm's α/m) can be passed. Where
BCa's bias correction would leave the estimate outside its interval, the interval is
extended to it (and then contains 0 at every level if the estimate lies on 0's other side).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TypeAlias

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray
from perflab.stats.bca import (
    bca_interval,
    expanded_z,
    jackknife_acceleration,
    pooled_shape_acceleration,
    row_quantiles,
)
from perflab.stats.diagnostics import bimodality_warning
from perflab.stats.intervals import (
    ABSOLUTE,
    RATIO,
    RELATIVE,
    Intervals,
    as_batch,
    check_levels,
    finite_or_reason,
    note_warnings,
    positive_rows,
    pow2_scale,
    reconcile,
    scale_warning,
)
from perflab.stats.options import DEFAULT_RESAMPLES
from perflab.stats.statistic import Statistic, parse_statistic
from perflab.stats.summary import Location, Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning

#: Rows × resamples per chunk of a batch: bounds each (rows, B) array to ~16 MB.
_CHUNK_ELEMENTS = 2_000_000

#: Which rows of a chunk a function of `_bca_rows` computes: all, or a mask.
_Rows: TypeAlias = slice | BoolArray

#: The fewest resamples an interval is drawn from (fewer cannot place its 2.5% tails).
MIN_RESAMPLES = 100


def min_runs(statistic: Statistic) -> int:
    """Fewest runs per variant for which the bootstrap of ``statistic`` keeps its coverage.

    The mean needs 5 (validated by simulation). A quantile q needs enough runs that
    about 3 of them lie beyond it on its thinner side, ⌈3/min(q, 1−q)⌉ (≥ 8): with fewer,
    resamples cannot move the statistic and the interval collapses.
    """
    if statistic.quantile is None:
        return 5
    tail = min(statistic.quantile, 1 - statistic.quantile)
    return max(8, math.ceil(3 / tail - 1e-9))


def _loo_stats(x: FloatArray, stat: Statistic) -> FloatArray:
    """Leave-one-out statistic of each row: (E, n) from (E, n)."""
    n = x.shape[1]
    if stat.name == "mean":
        loo: FloatArray = (x.sum(axis=1, keepdims=True) - x) / (n - 1)
        return loo
    keep = ~np.eye(n, dtype=bool)
    others = np.broadcast_to(np.arange(n), (n, n))[keep].reshape(n, n - 1)
    return stat.fn(x[:, others])


def _resampled_stats(
    x: FloatArray, stat: Statistic, resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Statistic of ``resamples`` bootstrap resamples of each row: (E, B).

    A resample is represented by how many times it takes each run (counts,
    B × n), so the mean is one matrix product and a quantile is read off the sorted
    runs at the position where the cumulated counts reach its order statistic — no
    B × n resampled arrays, no sorting per resample. The counts are shared by the rows
    of one batch (independent data sets: each row's bootstrap is valid on its own); for a
    quantile they count the runs in sorted order (exchangeable counts: the same bootstrap).
    """
    n = x.shape[1]
    picks = rng.integers(0, n, size=(resamples, n)) + (np.arange(resamples) * n)[:, None]
    counts = np.bincount(picks.ravel(), minlength=resamples * n).reshape(resamples, n)  # (B, n)
    if stat.quantile is None:
        if stat.name != "mean":
            raise ValueError(f"no resampling rule for statistic {stat.name!r}")
        means: FloatArray = (x @ counts.T.astype(np.float64)) / n
        return means
    xs = np.sort(x, axis=1)
    cum = np.cumsum(counts, axis=1)
    h = (n - 1) * stat.quantile  # numpy's default (linear) quantile: order statistics ⌊h⌋, ⌊h⌋+1
    j = math.floor(h)
    frac = h - j
    pos_j = np.argmax(cum >= j + 1, axis=1)
    out = xs[:, pos_j]
    if frac > 0:
        pos_k = np.argmax(cum >= j + 2, axis=1)
        out = out + frac * (xs[:, pos_k] - out)
    return out


def _rel_var(x: FloatArray) -> FloatArray:
    """Squared relative standard error of the mean of each row (Welch weight)."""
    m = x.mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel: FloatArray = x.var(axis=1, ddof=1) / (x.shape[1] * m * m)
    return rel


def _abs_var(x: FloatArray) -> FloatArray:
    """Squared standard error of the mean of each row (Welch weight of a difference)."""
    var: FloatArray = x.var(axis=1, ddof=1) / x.shape[1]
    return var


def bootstrap_batch(
    baseline: FloatArray,
    candidate: FloatArray,
    confidence: float | FloatArray = 0.95,
    statistic: str | Statistic = "mean",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | np.random.Generator = 0,
    expand: bool = True,
) -> Intervals:
    """BCa intervals of the change of stat(candidate) against stat(baseline), E comparisons.

    confidence: one level, or an (E,) array of one per row (with an integer ``seed`` the
    resamples are the same whatever the levels, so intervals at several levels are nested).

    baseline (E, n_a), candidate (E, n_b). Rows whose runs are all positive get the
    bootstrap of the ratio (``ratio``: never below −100%); other rows the bootstrap of the
    difference over |stat(baseline)| (``relative``), or in the unit where the baseline's
    own bootstrap interval contains 0 (``absolute``). ``expand=False`` gives plain BCa
    (as scipy.stats.bootstrap). Rows with fewer than `min_runs` runs get NaN intervals.
    """
    return _bootstrap(baseline, candidate, confidence, statistic, resamples, seed, expand)[0]


def _bootstrap(
    baseline: FloatArray,
    candidate: FloatArray,
    confidence: float | FloatArray,
    statistic: str | Statistic,
    resamples: int,
    seed: int | np.random.Generator,
    expand: bool,
) -> tuple[Intervals, BoolArray]:
    """(Intervals, guarded): guarded (E,) marks rows widened by `_lopsided_guard`."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"resamples must be ≥ {MIN_RESAMPLES}")
    st = parse_statistic(statistic)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    confidence = check_levels(confidence, a.shape[0])
    na, nb = a.shape[1], b.shape[1]
    positive = positive_rows(a, b)
    k = pow2_scale(a, b)
    a, b = a / k[:, None], b / k[:, None]
    sa, sb = st.fn(a), st.fn(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = (sb - sa) / np.abs(sa)
    scale = np.where(positive, RATIO, RELATIVE).astype(object)
    if min(na, nb) < min_runs(st):
        nan = np.full_like(est, np.nan)
        zero = ~positive & (sa == 0)
        scale[zero] = ABSOLUTE
        est = np.where(zero, (sb - sa) * k, est)
        return (
            Intervals(
                est,
                nan,
                nan.copy(),
                nan.copy(),
                sa * k,
                sb * k,
                scale,
                np.full(est.shape, "bca", object),
            ),
            np.zeros(est.shape, bool),
        )
    rows = max(1, _CHUNK_ELEMENTS // resamples)
    parts = [
        _bca_rows(
            a[i : i + rows],
            b[i : i + rows],
            sa[i : i + rows],
            sb[i : i + rows],
            positive[i : i + rows],
            st,
            confidence[i : i + rows],
            resamples,
            rng,
            expand,
        )
        for i in range(0, a.shape[0], rows)
    ]
    low, high, p, guarded, near0 = (np.concatenate(x) for x in zip(*parts))
    scale[near0] = ABSOLUTE
    div = np.where(positive, 1.0, np.where(near0, 1.0, np.abs(sa)))
    unit = np.where(near0, k, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(positive, sb / sa - 1.0, (sb - sa) / div) * unit
        low = np.where(positive, np.expm1(low), low / div) * unit
        high = np.where(positive, np.expm1(high), high / div) * unit
    iv = Intervals(est, low, high, p, sa * k, sb * k, scale, np.full(est.shape, "bca", object))
    return reconcile(finite_or_reason(iv), confidence), guarded


def _bca_rows(
    a: FloatArray,
    b: FloatArray,
    sa: FloatArray,
    sb: FloatArray,
    positive: BoolArray,
    st: Statistic,
    confidence: FloatArray,
    resamples: int,
    rng: np.random.Generator,
    expand: bool,
) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray, BoolArray]:
    """(low, high, p, guarded, near0) for a chunk of rows, on the working scale: the log
    ratio for positive rows, the difference for the others."""
    na, nb = a.shape[1], b.shape[1]
    rb = _resampled_stats(b, st, resamples, rng)  # candidate first: the same draws as ever
    ra = _resampled_stats(a, st, resamples, rng)
    la, lb = _loo_stats(a, st), _loo_stats(b, st)

    def rows(
        f_ratio: Callable[[_Rows], FloatArray], f_diff: Callable[[_Rows], FloatArray]
    ) -> FloatArray:
        """f_ratio on positive rows, f_diff on the others, each computed only where used."""
        if positive.all():
            return f_ratio(slice(None))
        if not positive.any():
            return f_diff(slice(None))
        part = f_ratio(positive)
        out: FloatArray = np.empty((positive.size,) + part.shape[1:])
        out[positive] = part
        out[~positive] = f_diff(~positive)
        return out

    with np.errstate(divide="ignore", invalid="ignore"):
        # θ: the change on the scale the acceleration and the guard were calibrated on
        theta = rows(lambda r: rb[r] / ra[r] - 1.0, lambda r: rb[r] - ra[r])
        jack = [
            rows(lambda r: sb[r, None] / la[r] - 1.0, lambda r: sb[r, None] - la[r]),
            rows(lambda r: lb[r] / sa[r, None] - 1.0, lambda r: lb[r] - sa[r, None]),
        ]
        # φ: the working scale the interval is read on (the log ratio keeps it above −100%)
        work = rows(lambda r: np.log(rb[r] / ra[r]), lambda r: theta[r])
        est_w = np.where(positive, np.log(sb / sa), sb - sa)
    accel = pooled_shape_acceleration(*jack)
    if expand and st.quantile is None:
        z, c, df = expanded_z(
            confidence,
            np.where(positive, _rel_var(a), _abs_var(a)),
            np.where(positive, _rel_var(b), _abs_var(b)),
            na,
            nb,
        )
    else:
        z = special.ndtri(0.5 + confidence / 2) * np.ones_like(sa)
        c, df = np.ones_like(sa), np.full_like(sa, np.inf)
    low, high, z_null = bca_interval(est_w, work, accel, z)
    p = np.minimum(1.0, 2 * special.stdtr(df, -np.abs(z_null) / c))
    guarded = np.zeros(sa.shape, bool)
    if expand and st.quantile is None:
        low, high, p, guarded = _lopsided_guard(
            est_w, theta, work, z, c, df, low, high, p, positive
        )
    # The estimate always lies inside: where BCa's bias correction left it out, the interval
    # reaches to it. It then contains 0 at every level if the estimate is on 0's other side.
    opposite = ((z_null < 0) & (est_w <= 0)) | ((z_null > 0) & (est_w >= 0))
    p = np.where(opposite, 1.0, p)
    low = np.minimum(low, est_w)
    high = np.maximum(high, est_w)
    # The baseline's statistic within its own noise of zero: its percentile interval holds 0.
    near0 = np.zeros(positive.shape, bool)
    if not positive.all():
        alpha = 1 - confidence[~positive]
        srt = np.sort(ra[~positive], axis=1)
        near0[~positive] = (row_quantiles(srt, alpha / 2) <= 0) & (
            row_quantiles(srt, 1 - alpha / 2) >= 0
        )
    return low, high, p, guarded, near0


#: |skewness| of the bootstrap replicates above which one or a few runs shape the interval.
LOPSIDED_SKEW = 0.3


def _lopsided_guard(
    est: FloatArray,
    theta: FloatArray,
    work: FloatArray,
    z: FloatArray,
    c: FloatArray,
    df: FloatArray,
    low: FloatArray,
    high: FloatArray,
    p: FloatArray,
    is_ratio: BoolArray,
) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray]:
    """Where the bootstrap distribution is lopsided, widen to also cover est ± z·se*.

    A percentile-type interval takes its shape from the bootstrap distribution. When one
    wild run dominates it (|skewness| > 0.3 of the change's replicates), that shape leans
    the way the run pushed the estimate, and both the bias correction and the long tail
    put the interval further from zero: simulated A/A false-positive rate 5.8% for
    Student-t3 runs at n = 30. Here the interval becomes the union of the BCa interval
    and the symmetric one from the bootstrap standard error (same expanded quantile, on the
    working scale: the log ratio for positive runs, so it never reaches −100%): 5.0% at
    n = 30, 3.7% at n = 10; normal and log-normal runs are almost never affected. The
    p-value is the larger of the two, so it still agrees with the interval at every level.
    """
    dev = theta - theta.mean(axis=1, keepdims=True)
    m2 = np.mean(dev * dev, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = np.where(m2 > 0, np.abs(np.mean(dev * dev * dev, axis=1)) / m2**1.5, 0.0)
    # (replicates that differ only by rounding have no shape to speak of)
    real = np.sqrt(m2) > 1e-9 * (np.abs(theta.mean(axis=1)) + 1e-300)
    guard = (skew > LOPSIDED_SKEW) & real
    if not guard.any():
        return low, high, p, guard
    # The spread of the change's own replicates, carried to the working scale (÷ (1 + θ̂) for
    # the log ratio, to first order): the log would shrink the very tail that one wild run
    # made long (simulated A/A false positives of skewed runs, n = 30: 6.0% with the log
    # ratio's own spread, 3.9% with this), and the interval stays above −100% all the same.
    se = theta.std(axis=1, ddof=1) * np.where(is_ratio, 1.0 / np.exp(est), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_sym = np.where(
            se > 0, 2 * special.stdtr(df, -np.abs(est) / (c * se)), np.where(est == 0, 1.0, 0.0)
        )
    low = np.where(guard, np.minimum(low, est - z * se), low)
    high = np.where(guard, np.maximum(high, est + z * se), high)
    p = np.where(guard, np.maximum(p, np.minimum(1.0, p_sym)), p)
    return low, high, p, guard


class Bootstrap:
    """BCa bootstrap of the relative change of a statistic (mean, median, pNN) of the runs."""

    name = "bootstrap"

    def __init__(
        self,
        statistic: str = "mean",
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = 0,
        expand: bool = True,
    ):
        self.statistic = parse_statistic(statistic)
        self.resamples = int(resamples)
        self.seed = int(seed)
        self.expand = bool(expand)
        self.description = (
            f"BCa bootstrap interval of the relative change of the {self.statistic.name} "
            f"({self.resamples} resamples, seed {self.seed})"
        )

    def _refusal(self, n: int) -> StatWarning:
        need = min_runs(self.statistic)
        return StatWarning(
            "too_few_runs",
            f"a bootstrap of the {self.statistic.name} needs ≥ {need} runs per variant "
            f"(have {n}): add runs, or use --method welch or mannwhitney",
            {"n": n, "needed": need},
        )

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        """`summarize` plus the BCa interval of the statistic itself (expanded, one sample)."""
        base = summarize(sample, confidence)
        x = as_sample(sample)[None, :]
        st = self.statistic
        value = float(st.fn(x)[0])
        if x.shape[1] < min_runs(st):
            loc = Location(st.name, value, math.nan, math.nan, confidence, "bca")
            return _with_location(base, loc, (self._refusal(x.shape[1]),))
        rng = np.random.default_rng(self.seed)
        k = pow2_scale(x)
        xs = x / k[:, None]
        boot = _resampled_stats(xs, st, self.resamples, rng)
        accel = jackknife_acceleration([_loo_stats(xs, st)])
        if self.expand:
            z, _, _ = expanded_z(confidence, _rel_var(xs), None, x.shape[1], None)
        else:
            z = special.ndtri(0.5 + confidence / 2)
        low, high, _ = bca_interval(st.fn(xs), boot, accel, z)
        loc = Location(
            st.name, value, float(low[0] * k[0]), float(high[0] * k[0]), confidence, "bca"
        )
        return _with_location(base, loc, ())

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        res, guarded = _bootstrap(
            a, b, confidence, self.statistic, self.resamples, self.seed, self.expand
        )
        warnings: list[StatWarning] = []
        if min(a.size, b.size) < min_runs(self.statistic):
            warnings.append(self._refusal(int(min(a.size, b.size))))
        else:
            if guarded[0]:
                warnings.append(
                    StatWarning(
                        "interval_guarded",
                        "one or a few runs make the bootstrap distribution lopsided, so the interval "
                        "was widened to also cover the symmetric bootstrap-SE interval; look for "
                        "outlying runs and their cause",
                        {},
                    )
                )
            elif self.statistic.quantile is not None:
                bim = [w for w in (bimodality_warning(a), bimodality_warning(b)) if w is not None]
                if bim:
                    warnings.append(
                        StatWarning(
                            "quantile_in_gap",
                            f"runs are bimodal, and a bootstrap of the {self.statistic.name} "
                            "under-covers when it falls between the modes: use --method "
                            "mannwhitney or find the cause of the two modes",
                            {},
                        )
                    )
            w = scale_warning(
                str(res.scale[0]), self.statistic.name, {"baseline": float(res.baseline[0])}
            )
            if w is not None:
                warnings.append(w)
            warnings += note_warnings(res, 0)
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic=self.statistic.name,
            interval="bca",
            warnings=tuple(warnings),
        )


def _with_location(base: Summary, loc: Location, warnings: tuple[StatWarning, ...]) -> Summary:
    return dataclasses.replace(base, location=loc, warnings=base.warnings + warnings)
