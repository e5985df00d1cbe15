"""Runs made on several devices: the change estimated within each device, combined.

Assumption: the devices (boards of one model) differ by a fixed factor each — a few
percent, up to 10% — and a variant changes every device alike; runs are independent
within a device. Pooling every device's runs as one sample turns the boards' differences
into noise when each variant ran alike on every board, and into a false change when it
did not (simulated, boards ±5%, docs/statistics.md: Welch's power for a 4% change at 30
runs on 4 boards falls from 84% to 78%; with the baseline twice as often on half of the
boards, false positives reach 13.5% with Welch, 17.5% with `auto`). So the device is a
blocking factor:

- clean runs: the fixed-effects model on the log scale, log y = device + variant + ε
  (`fixed_effects.py`), the change exp(β) − 1 with the t interval of β (N − D − 1 df):
  the ratio of the variants' geometric means on a common board. Chosen over combining
  each board's own Welch estimate by inverse-variance weights, which rest on each board's
  variance estimated from a few runs: up to 21% false positives, against 5.5% at most.
- outlying or skewed runs (`auto.py`'s rule, judged on each run less its device's mean,
  both variants together: a choice blind to the variants, so the rank test stays exact
  whatever it chose): van Elteren's stratified rank test and Hodges–Lehmann ratio
  (`van_elteren.py`). With one run in ten throttled ×2, the fixed-effects model finds a
  4% change at 10 runs on 4 boards 9% of the time, the choice 22%.
- a variant with fewer than 4 runs, or fewer than 16 pairs of runs on a common device:
  the fixed-effects model (too few pairs for a rank test to reach p ≤ 5%).

Simulated over six noise families, 2–4 boards and 10 or 30 runs per variant, the choice
keeps 3.0–5.9% false positives at α = 5%, with balanced or unbalanced boards. Runs not
all positive are modelled in their unit (additive offsets): the change over |the
baseline's fleet mean| (``relative``), or in the unit (``absolute``) when that mean is
within its noise of zero; ranks give the shift over the baseline median. Estimate,
interval and p-value come from one test, so they agree at every level.

Blocks and devices: each block of an interleaved plan runs whole on one device, so the
paired analysis (`paired.py`), comparing variants within blocks, already removes each
device's offset with the block's; it needs no device term, and it is the one to use when
the machine drifts between blocks. This method is what the unpaired analyses need on a
fleet (no drift to remove, or incomplete blocks): it uses every run, with N − D − 1
degrees of freedom where the paired test has k − 1 for k blocks. A board's offset, and a
board apart, are reported beside either (`device_offsets.py`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray, Values, medians
from perflab.stats.auto import MIN_RANK_RUNS, residual_flags
from perflab.stats.fixed_effects import (
    AdditiveFit,
    Layout,
    fit_additive,
    fleet_contrast,
    make_layout,
    variant_contrast,
)
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
from perflab.stats.mannwhitney import median_interval
from perflab.stats.summary import Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.van_elteren import pairs, van_elteren
from perflab.stats.warnings import Detail, StatWarning

TESTS = ("auto", "fixed", "ranks")
FIXED, RANKS = "fixed-effects", "van-elteren"


def device_batch(
    baseline: FloatArray,
    candidate: FloatArray,
    baseline_devices: Sequence[str],
    candidate_devices: Sequence[str],
    confidence: float | FloatArray = 0.95,
    test: str = "auto",
) -> Intervals:
    """Intervals of the change for E comparisons whose runs share one layout: baseline
    (E, n_a), candidate (E, n_b), and the device of each column. ``kind`` says which test
    each row took (``fixed-effects`` or ``van-elteren``)."""
    return analyse(
        baseline, candidate, baseline_devices, candidate_devices, confidence, test
    ).intervals


class DeviceAnalysis(NamedTuple):
    """The intervals of `device_batch` and why each row took its test (`analyse`)."""

    intervals: Intervals
    reasons: list[str]  # a key of `auto.REASONS` per row; "" when the test was named


def analyse(
    baseline: FloatArray,
    candidate: FloatArray,
    baseline_devices: Sequence[str],
    candidate_devices: Sequence[str],
    confidence: float | FloatArray = 0.95,
    test: str = "auto",
) -> DeviceAnalysis:
    """`device_batch`, and why each row took its test (a key of `auto.REASONS`; ``""``
    when the test was asked for by name)."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r} (choose from {', '.join(TESTS)})")
    a, b = as_batch(baseline, "baseline"), as_batch(candidate, "candidate")
    if len(baseline_devices) != a.shape[1] or len(candidate_devices) != b.shape[1]:
        raise ValueError("one device per run is needed")
    layout = make_layout([baseline_devices, candidate_devices])
    levels = check_levels(confidence, a.shape[0])
    positive = positive_rows(a, b)
    s = pow2_scale(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        xa = np.where(positive[:, None], np.log(np.abs(a)), a / s[:, None])
        xb = np.where(positive[:, None], np.log(np.abs(b)), b / s[:, None])
    y = np.concatenate([xa, xb], axis=1)
    fit = fit_additive(y, layout)
    reasons = _choose(y, layout, a.shape[1], b.shape[1], test)
    iv = _fixed(fit, layout, positive, s, levels)
    rank = np.array([r in ("outliers", "skew") for r in reasons]) | (test == "ranks")
    if rank.any():
        iv = _with_ranks(iv, rank, (xa, xb), (a, b), layout, positive, s, levels)
    return DeviceAnalysis(reconcile(finite_or_reason(iv), levels), reasons)


def _choose(y: FloatArray, layout: Layout, na: int, nb: int, test: str) -> list[str]:
    """Why each row of (E, N) working values takes its test under ``auto``: outlying or
    skewed runs by `auto`'s rule, judged on each run less its device's mean (both variants
    together, so that the choice does not depend on which run is which variant)."""
    e = y.shape[0]
    if test != "auto":
        return [""] * e
    if min(na, nb) < MIN_RANK_RUNS or pairs(layout).baseline_run.size < MIN_RANK_RUNS**2:
        return ["few_runs"] * e
    residuals = y.copy()
    for d in range(len(layout.devices)):
        on = layout.device == d
        residuals[:, on] -= y[:, on].mean(axis=1, keepdims=True)
    outlying, skewed = residual_flags(residuals)
    return [
        "outliers" if o else "skew" if k else "clean"
        for o, k in zip(outlying.tolist(), skewed.tolist())
    ]


def _fixed(
    fit: AdditiveFit, layout: Layout, positive: BoolArray, s: FloatArray, levels: FloatArray
) -> Intervals:
    """The fixed-effects rows: β and its t interval, as a ratio or over |fleet mean|."""
    e = s.size
    cv, cf = variant_contrast(layout, 1), fleet_contrast(layout)
    beta, se = fit.estimate(cv), fit.se(cv)
    base, se_base = fit.estimate(cf), fit.se(cf)
    df = fit.df
    t = special.stdtrit(df, 0.5 + levels / 2) if df > 0 else np.full(e, np.nan)
    exact = se == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(
            exact, np.where(beta == 0, 1.0, 0.0), 2 * special.stdtr(df, -np.abs(beta) / se)
        )
        lo = np.where(exact, beta, beta - t * se)
        hi = np.where(exact, beta, beta + t * se)
        near0 = ~positive & (np.abs(base) <= t * se_base)
        div = np.where(positive | near0, 1.0, np.abs(base))
        unit = np.where(near0, s, 1.0)
        est, low, high = (np.where(positive, np.expm1(x), x / div * unit) for x in (beta, lo, hi))
        loc_a = np.where(positive, np.exp(base), base * s)
        loc_b = np.where(positive, np.exp(base + beta), (base + beta) * s)
    if df < 1:
        p = np.full(e, np.nan)
        low, high = np.full(e, np.nan), np.full(e, np.nan)
    scale = np.where(positive, RATIO, np.where(near0, ABSOLUTE, RELATIVE)).astype(object)
    kind = np.where(exact & (df > 0), "exact", FIXED).astype(object)
    return Intervals(est, low, high, p, loc_a, loc_b, scale, kind)


def _with_ranks(
    iv: Intervals,
    rows: BoolArray,
    working: tuple[FloatArray, FloatArray],
    raw: tuple[FloatArray, FloatArray],
    layout: Layout,
    positive: BoolArray,
    s: FloatArray,
    levels: FloatArray,
) -> Intervals:
    """``iv`` with ``rows`` replaced by van Elteren's: a ratio, or the shift over |baseline
    median| (in the unit when that median's own interval holds 0)."""
    i = np.flatnonzero(rows)
    (xa, xb), (a, b) = working, raw
    est, lo, hi, p = van_elteren(xa[i], xb[i], a[i], b[i], layout, 1 - levels[i])
    med_a, med_b = medians(a[i]), medians(b[i])
    near0 = np.zeros(i.size, bool)
    for r, row in enumerate(i):
        if not positive[row]:
            m_lo, m_hi = median_interval(a[row], float(levels[row]))
            if math.isnan(m_lo):
                m_lo, m_hi = float(a[row].min()), float(a[row].max())
            near0[r] = m_lo <= 0 <= m_hi
    pos = positive[i]
    div = np.where(pos | near0, 1.0, np.abs(med_a) / s[i])
    unit = np.where(near0, s[i], 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        est, lo, hi = (np.where(pos, np.expm1(x), x / div * unit) for x in (est, lo, hi))
    out = [np.array(f, copy=True) for f in (iv.estimate, iv.low, iv.high, iv.p_value)]
    for f, new in zip(out, (est, lo, hi, p)):
        f[i] = new
    loc_a, loc_b = iv.baseline.copy(), iv.candidate.copy()
    loc_a[i], loc_b[i] = med_a, med_b
    scale, kind = iv.scale.copy(), iv.kind.copy()
    scale[i] = np.where(pos, RATIO, np.where(near0, ABSOLUTE, RELATIVE))
    kind[i] = RANKS
    return Intervals(out[0], out[1], out[2], out[3], loc_a, loc_b, scale, kind, iv.note)


class Devices:
    """The change within devices, combined across them (see the module's docstring).

    test: ``auto`` (fixed effects for clean runs, van Elteren's ranks for outlying or
    skewed ones), ``fixed`` or ``ranks``."""

    name = "devices"
    description = "the change within each device, combined (fixed effects or stratified ranks)"

    def __init__(self, test: str = "auto"):
        if test not in TESTS:
            raise ValueError(f"unknown test {test!r} (choose from {', '.join(TESTS)})")
        self.test = test

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return summarize(sample, confidence)

    def compare(
        self,
        baseline: Values,
        candidate: Values,
        confidence: float = 0.95,
        *,
        baseline_devices: Sequence[str] | None = None,
        candidate_devices: Sequence[str] | None = None,
    ) -> Comparison:
        """Each run's device in ``*_devices`` (without them, every run is on one device).
        Raises ValueError when no device ran both variants."""
        a, b = as_sample(baseline), as_sample(candidate)
        if (baseline_devices is None) != (candidate_devices is None):
            raise ValueError("give the devices of both the baseline and the candidate runs")
        da = [""] * a.size if baseline_devices is None else [str(d) for d in baseline_devices]
        db = [""] * b.size if candidate_devices is None else [str(d) for d in candidate_devices]
        res, reasons = analyse(a, b, da, db, confidence, self.test)
        scale, kind = str(res.scale[0]), str(res.kind[0])
        ranks = kind == RANKS
        stat = ("hl-ratio" if scale == RATIO else "hl-shift") if ranks else "geomean"
        if not ranks and scale != RATIO:
            stat = "mean"
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic=stat,
            warnings=tuple(_warnings(res, a, b, make_layout([da, db]), ranks)),
            choice=reasons[0],
        )


def _warnings(
    res: Intervals, a: FloatArray, b: FloatArray, layout: Layout, ranks: bool
) -> list[StatWarning]:
    """What row 0 of a comparison calls for saying."""
    out: list[StatWarning] = []
    d = len(layout.devices)
    if math.isnan(res.rows().low[0]):  # no interval
        if ranks:
            message = (
                "too few pairs of runs made on one device for a rank interval at this level: "
                "add runs, or use the fixed-effects test"
            )
        else:
            message = (
                f"an interval within devices needs more runs than devices + 1 "
                f"(have {a.size + b.size} runs on {d} device(s)): add runs"
            )
        details: dict[str, Detail] = {"n_baseline": a.size, "n_candidate": b.size, "devices": d}
        out.append(StatWarning("too_few_runs", message, details))
        return out
    w = scale_warning(str(res.scale[0]), "median" if ranks else "mean")
    if w is not None:
        out.append(w)
    combined = np.concatenate([a, b])
    if ranks and np.unique(combined).size < combined.size:
        out.append(
            StatWarning(
                "ties",
                "tied values (a coarse unit?): the stratified rank test uses the tie-corrected "
                "variance, read conservatively at a tie exactly at no change; record the metric "
                "with more precision",
                {"distinct": int(np.unique(combined).size), "n": int(combined.size)},
            )
        )
    return out + note_warnings(res, 0)
