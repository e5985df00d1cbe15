"""Welch's test of the difference of means, with an interval of the relative change that
always agrees with it.

Assumption: each sample's mean is approximately normal (runs independent, n not
tiny or the runs themselves near-normal); variances may differ. Chosen as the
default because benchmark runs of two variants rarely have equal variance, its
error rates hold for every run distribution simulated (normal, log-normal, t3,
bimodal; n = 5…30), it has the most power of the methods here, and it is what
the MGLRU memcached experiment's TLDR uses: CI(μ_b − μ_a) / mean(a).

The p-value is always Welch's t-test of μ_b = μ_a (scipy's ``ttest_ind(equal_var=False)``).
Every interval below inverts that same test, at every level — so whichever is shown,
significant ⇔ the interval excludes 0 ⇔ p ≤ α, also after a correction recomputes it at
another level. The change is defined as in `intervals.py` (``ratio`` for all-positive
runs, else ``relative`` or ``absolute``):

- ``difference``: CI(μ_b − μ_a)/|mean(a)| (in the unit for ``absolute``). It ignores
  that the baseline mean is estimated, so for large changes next to a noisy baseline it
  covers less than its level (`implied_coverage`: ≈ 89% at +100%) and, for positive
  runs, can even reach below −100% — impossible for a ratio of positive means.
- ``fieller``: Fieller's interval of the ratio μ_b/μ_a, the set of ratios ρ for which
  Welch's test of μ_b = ρ·μ_a (with Welch's degrees of freedom) does not reject; at ρ = 1
  it is Welch's test itself. For positive runs it is taken on ρ > 0 (`fieller.py`): never
  below −100%; where it reaches −100% or +∞ at this level (a mean not clearly above zero),
  a finite stand-in bound (the log-ratio interval's) is shown and a warning says so.
  Only for positive runs (a ratio of means of mixed sign says nothing useful).
- ``auto`` (default): for positive runs, the difference interval unless it would reach
  −100% or below, or its implied coverage falls more than COVERAGE_LOSS below the level —
  then Fieller's; otherwise the difference interval. ``Comparison.interval`` says which.

Welch is scale-free: values are rescaled by a power of two before any arithmetic, so the
same intervals come out for runs of 1e-300 and of 1e300.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray, ObjectArray
from perflab.stats.batched import Batched
from perflab.stats.fieller import fieller_positive, log_ratio, stand_in, stand_in_warning
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
from perflab.stats.options import WELCH_INTERVALS
from perflab.stats.summary import Summary, as_sample, summarize, summarize_many
from perflab.stats.types import Comparison
from perflab.stats.warnings import Detail, StatWarning

#: Use Fieller's interval (auto) / warn (difference) when the difference interval's
#: implied coverage falls this far below its level.
COVERAGE_LOSS = 0.01


def _welch_df(va: FloatArray, vb: FloatArray, na: int, nb: int) -> FloatArray:
    tot = va + vb
    with np.errstate(invalid="ignore", divide="ignore"):
        df = tot * tot / (va * va / (na - 1) + vb * vb / (nb - 1))
    return np.where(np.isfinite(df) & (df > 0), df, float(na + nb - 2))


def _implied(
    ma: FloatArray, mb: FloatArray, va: FloatArray, vb: FloatArray, df: FloatArray, t: FloatArray
) -> FloatArray:
    """Implied coverage of the difference interval for the ratio (see `implied_coverage`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = mb / ma
        f = np.sqrt((vb + rho * rho * va) / (va + vb))
        cov = 2 * special.stdtr(df, t / f) - 1
    return np.where(np.isfinite(cov), cov, 1.0)


def implied_coverage(baseline: FloatArray, candidate: FloatArray, confidence: float) -> float:
    """Approximate actual coverage of the difference interval for the ratio of means.

    Dividing the difference's interval by the baseline mean ignores that the mean is
    estimated: the relative change's variance is (v_b + ρ²·v_a)/m_a², not
    (v_a + v_b)/m_a². With f² their ratio, the interval's t quantile is effectively t/f.
    (Simulated: a +10% change with equal noise gives f = 1.05 and ≈ 94% coverage; +100%
    gives ≈ 89%; Fieller's interval stays at 95%.) Any magnitude of values.
    """
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    if a.shape[1] < 2 or b.shape[1] < 2:
        return confidence
    s = pow2_scale(a, b)
    x, y = a / s[:, None], b / s[:, None]
    ma, mb = x.mean(axis=1), y.mean(axis=1)
    va, vb = x.var(axis=1, ddof=1) / x.shape[1], y.var(axis=1, ddof=1) / y.shape[1]
    if float(va[0] + vb[0]) == 0 or float(ma[0]) == 0:
        return confidence
    df = _welch_df(va, vb, x.shape[1], y.shape[1])
    t = special.stdtrit(df, 0.5 + confidence / 2)
    return float(_implied(ma, mb, va, vb, df, t)[0])


def welch_batch(
    baseline: FloatArray,
    candidate: FloatArray,
    confidence: float | FloatArray = 0.95,
    interval: str = "auto",
) -> Intervals:
    """Welch intervals for E comparisons: ``baseline`` (E, n_a), ``candidate`` (E, n_b).

    confidence: one level, or an (E,) array of one per row.

    Needs n_a, n_b ≥ 2 (NaN intervals otherwise). Where both samples are constant the
    difference is known exactly (zero-width interval, p = 0 or 1).
    """
    if interval not in WELCH_INTERVALS:
        raise ValueError(
            f"unknown Welch interval {interval!r} (choose from {', '.join(WELCH_INTERVALS)})"
        )
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    na, nb = a.shape[1], b.shape[1]
    e = a.shape[0]
    confidence = check_levels(confidence, e)
    positive = positive_rows(a, b)
    s = pow2_scale(a, b)
    x, y = a / s[:, None], b / s[:, None]
    ma, mb = x.mean(axis=1), y.mean(axis=1)
    scale = np.where(positive, RATIO, RELATIVE).astype(object)
    if na < 2 or nb < 2:
        return _without_interval(ma, mb, s, positive, scale)

    diff = mb - ma
    absm = np.abs(ma)
    q = 0.5 + confidence / 2
    va = x.var(axis=1, ddof=1) / na
    vb = y.var(axis=1, ddof=1) / nb
    tot = va + vb
    exact = tot == 0
    df = _welch_df(va, vb, na, nb)
    se = np.sqrt(tot)
    t = special.stdtrit(df, q)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(
            exact, np.where(diff == 0, 1.0, 0.0), 2 * special.stdtr(df, -np.abs(diff) / se)
        )
        # The baseline mean within its own noise of zero: its t interval contains 0.
        near0 = ~positive & (absm <= special.stdtrit(na - 1, q) * np.sqrt(va))
        scale[near0] = ABSOLUTE
        div = np.where(near0, 1.0, absm)
        est = diff / div
        low = np.where(exact, diff, diff - t * se) / div
        high = np.where(exact, diff, diff + t * se) / div

    # Where the difference interval covers visibly less than its level (noted on every
    # row), and for ratio rows where it will not do at all, Fieller's (same test).
    short = ~near0 & ~exact & (_implied(ma, mb, va, vb, df, t) < confidence - COVERAGE_LOSS)
    note = add_note(np.full(e, "", dtype=object), short, "coverage_short")
    need, note = _fieller_rows(interval, positive, short, exact, low, note)
    kind = np.full(e, "difference", dtype=object)
    if need.any():
        i = np.flatnonzero(need)
        r_lo, r_hi, at_zero, at_inf = _fieller(
            ma[i], mb[i], va[i], vb[i], (na, nb), t[i], q[i], p[i] > 1 - confidence[i]
        )
        note = add_note(note, need & np.isin(np.arange(e), i[at_zero]), "lower_unbounded")
        note = add_note(note, need & np.isin(np.arange(e), i[at_inf]), "upper_unbounded")
        low[i], high[i] = r_lo - 1.0, r_hi - 1.0
        kind[i] = "fieller"
    if interval == "fieller":
        note = add_note(note, ~positive, "fieller_needs_positive")
    kind[exact] = "exact"

    unit = np.where(near0, s, 1.0)
    iv = Intervals(est * unit, low * unit, high * unit, p, ma * s, mb * s, scale, kind, note)
    return reconcile(finite_or_reason(iv), confidence)


def _without_interval(
    ma: FloatArray, mb: FloatArray, s: FloatArray, positive: BoolArray, scale: ObjectArray
) -> Intervals:
    """Fewer than 2 runs on a side: the change alone (in the unit where the baseline mean is
    0; ``s``: the rows' rescaling), no interval and no p-value."""
    e = ma.size
    diff = mb - ma
    near0 = ~positive & (ma == 0)
    scale[near0] = ABSOLUTE
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(near0, diff * s, diff / np.abs(ma))
    nan = np.full(e, np.nan)
    kind = np.full(e, "", dtype=object)
    note = np.full(e, "", dtype=object)
    return Intervals(est, nan, nan.copy(), nan.copy(), ma * s, mb * s, scale, kind, note)


def _fieller_rows(
    interval: str,
    positive: BoolArray,
    short: BoolArray,
    exact: BoolArray,
    low: FloatArray,
    note: ObjectArray,
) -> tuple[BoolArray, ObjectArray]:
    """The rows that get Fieller's interval instead of the difference interval (never an
    exact one): every positive row for ``fieller``; else the positive rows whose difference
    interval reaches −100% (noted), and for ``auto`` also those whose coverage falls short."""
    if interval == "fieller":
        need = positive.copy()
    else:
        with np.errstate(invalid="ignore"):
            below = positive & (low <= -1)
        note = add_note(note, below, "below_minus_100")
        need = below
        if interval == "auto":
            need = need | (positive & short)
    need &= ~exact
    return need, note


def _fieller(
    ma: FloatArray,
    mb: FloatArray,
    va: FloatArray,
    vb: FloatArray,
    sizes: tuple[int, int],
    t: FloatArray,
    q: FloatArray,
    contains_one: BoolArray,
) -> tuple[FloatArray, FloatArray, BoolArray, BoolArray]:
    """Fieller's interval of the ratio of means (positive runs): (low, high, at_zero, at_inf)
    as `fieller_positive`, with the log-ratio interval's bound standing in where it reaches
    0 or +∞. ``contains_one``: p > α, the test does not reject ratio 1."""
    r_lo, r_hi, at_zero, at_inf = fieller_positive(mb, ma, vb, va, 0.0, t)
    if (at_zero | at_inf).any():
        wa, wb = va / ma**2, vb / mb**2
        df_l = _welch_df(wa, wb, *sizes)
        _, _, l_lo, l_hi = log_ratio(mb, ma, vb, va, 0.0, df_l, special.stdtrit(df_l, q))
        rho = mb / ma
        r_lo, r_hi = stand_in(r_lo, r_hi, at_zero, at_inf, rho, contains_one, l_lo, l_hi)
    return r_lo, r_hi, at_zero, at_inf


class Welch(Batched):
    """Welch's t-test, with the difference interval or Fieller's ratio interval of the change."""

    name = "welch"
    description = "Welch's t interval of the difference of means, over the baseline mean"

    def __init__(self, interval: str = "auto"):
        if interval not in WELCH_INTERVALS:
            raise ValueError(
                f"unknown Welch interval {interval!r} (choose from {', '.join(WELCH_INTERVALS)})"
            )
        self.interval = interval
        if interval == "fieller":
            self.description = "Welch/Fieller interval of the ratio of means"

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return summarize(sample, confidence)

    def summary_many(
        self, samples: Sequence[Sequence[float]], confidence: float = 0.95
    ) -> list[Summary]:
        return summarize_many(samples, confidence)

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        a = as_sample(baseline)
        b = as_sample(candidate)
        return self._comparison(welch_batch(a, b, confidence, self.interval), 0, a, b, confidence)

    def _batch(self, a: FloatArray, b: FloatArray, lv: FloatArray) -> Intervals:
        return welch_batch(a, b, lv, self.interval)

    def _comparison(
        self, res: Intervals, i: int, a: FloatArray, b: FloatArray, confidence: float
    ) -> Comparison:
        """Row ``i`` of a batch result as a Comparison, with the warnings it calls for."""
        return res.comparison(
            i,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic="mean",
            warnings=self._warnings_of(res, i, a, b, confidence),
        )

    def _comparisons(
        self, res: Intervals, a: FloatArray, b: FloatArray, levels: list[float]
    ) -> list[Comparison]:
        """The rows of a batch result (the rows of blocks ``a`` and ``b``) as Comparisons."""
        return res.comparisons(
            range(len(levels)),
            method=self.name,
            levels=levels,
            n_baseline=int(a.shape[1]),
            n_candidate=int(b.shape[1]),
            statistic="mean",
            warnings=[self._warnings_of(res, i, a[i], b[i], lv) for i, lv in enumerate(levels)],
        )

    def _warnings_of(
        self, res: Intervals, i: int, a: FloatArray, b: FloatArray, confidence: float
    ) -> tuple[StatWarning, ...]:
        r = res.rows()
        scale = r.scale[i]
        if not r.note[i] and scale != ABSOLUTE and a.size > 1 and b.size > 1:
            return ()  # (most rows of a table have nothing to warn about: no call for them)
        return self._warnings(res, i, a, b, confidence, scale)

    def _warnings(
        self, res: Intervals, i: int, a: FloatArray, b: FloatArray, confidence: float, scale: str
    ) -> tuple[StatWarning, ...]:
        """What row ``i`` of a batch result calls for saying."""
        notes = res.notes(i)
        warnings: list[StatWarning] = []
        if a.size < 2 or b.size < 2:
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    "need ≥ 2 runs per variant for an interval (≥ 5 for a trustworthy one)",
                    {"n_baseline": int(a.size), "n_candidate": int(b.size)},
                )
            )
        else:
            if "below_minus_100" in notes and self.interval == "difference":
                warnings.append(
                    StatWarning(
                        "interval_replaced",
                        "the difference interval would reach −100% or below, impossible for a ratio of "
                        "positive means: Fieller's ratio interval (the same test) is shown",
                        {},
                    )
                )
            if "lower_unbounded" in notes or "upper_unbounded" in notes:
                warnings.append(
                    stand_in_warning("lower_unbounded" in notes, "upper_unbounded" in notes)
                )
            if "fieller_needs_positive" in notes:
                warnings.append(
                    StatWarning(
                        "interval_replaced",
                        "Fieller's ratio interval needs runs that are all positive: the difference "
                        f"interval ({'in the metric unit' if scale == ABSOLUTE else 'over |baseline mean|'}) "
                        "is shown, with the same test",
                        {},
                    )
                )
            if res.kind[i] == "difference" and "coverage_short" in notes:
                cov = implied_coverage(a, b, confidence)
                warnings.append(self._coverage_warning(a, b, confidence, cov, scale))
            w = scale_warning(scale, "mean", {"baseline_mean": float(res.baseline[i])})
            if w is not None:
                warnings.append(w)
            warnings += note_warnings(res, i)
        return tuple(warnings)

    @staticmethod
    def _coverage_warning(
        a: FloatArray, b: FloatArray, confidence: float, cov: float, scale: str
    ) -> StatWarning:
        details: dict[str, Detail] = {"implied_coverage": cov}
        if scale == RATIO:
            fl = welch_batch(a, b, confidence, "fieller")
            lo, hi = float(fl.low[0]), float(fl.high[0])
            details.update(fieller_low=lo, fieller_high=hi)
            remedy = (
                f"Fieller's ratio interval, [{lo:+.2%}, {hi:+.2%}], accounts for it "
                "(interval = fieller or auto)"
            )
        else:
            remedy = (
                "Fieller's ratio interval, which would account for it, needs positive runs; "
                "add runs to narrow the baseline mean"
            )
        return StatWarning(
            "baseline_uncertainty",
            f"the change is large next to the baseline mean's own uncertainty, which this "
            f"interval ignores: its real coverage is about {cov:.1%}, not {confidence:.0%}; {remedy}",
            details,
        )
