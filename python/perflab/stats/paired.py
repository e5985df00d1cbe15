"""Paired (blocked) analysis: compare the variants within each block of interleaved runs.

Assumption: runs were executed in blocks (perflab's ``order = "interleaved"``: each
block runs every variant once, in random order), and whatever drifts over time —
thermal state, background load, memory fragmentation, a noisy neighbour — shifts
both variants of a block alike. Per block the variants' means are taken (several runs
of a variant in one block are averaged); the test is the paired t-test of the
within-block differences, which removes the drift between blocks from the error; the
interval of the ratio of means is Fieller's with the paired covariance (the set of ρ
for which the within-block differences b_j − ρ·a_j have mean zero by a t-test), so the
baseline's own uncertainty is accounted for. The change is defined as for every method
(`intervals.py`): a ratio for positive runs (Fieller's set taken on ρ > 0), else the
difference over |baseline mean|, or in the unit when that mean is within noise of zero. Chosen whenever runs were blocked and
drift is plausible: on data with drift between blocks its intervals are much narrower
than unpaired Welch's (simulated: 3% block-to-block drift, 1% run noise, 10 blocks:
median half-width 2.9× smaller, power for a 2% change 97% instead of 12%; see
tests/stats/test_paired.py); without drift it costs a little power (df = k − 1).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray, Values
from perflab.stats.fieller import (
    component_p_value,
    fieller_positive,
    log_ratio,
    stand_in,
    stand_in_warning,
)
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
from perflab.stats.summary import Summary, as_sample, summarize
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning


def paired_batch(
    baseline: FloatArray, candidate: FloatArray, confidence: float | FloatArray = 0.95
) -> Intervals:
    """Paired intervals for E comparisons; column j of both arrays is block j: (E, k).
    confidence: one level, or an (E,) array of one per row.

    Positive runs (``ratio``): Fieller's interval of the ratio of means with the paired
    covariance, on ρ > 0, and the p-value that agrees with it at every level (the paired
    t-test's, unless the baseline mean itself is not clearly above zero — see
    `fieller.component_p_value`). Otherwise the paired t interval of the difference of means,
    over |baseline mean| (``relative``) or in the unit (``absolute``, when the baseline
    mean's own interval contains 0).
    """
    a = as_batch(baseline, "baseline")
    b = as_batch(candidate, "candidate")
    if a.shape != b.shape:
        raise ValueError(
            f"paired samples need one value per block on each side: {a.shape} vs {b.shape}"
        )
    e, k = a.shape
    confidence = check_levels(confidence, e)
    positive = positive_rows(a, b)
    s = pow2_scale(a, b)
    x, y = a / s[:, None], b / s[:, None]
    ma, mb = x.mean(axis=1), y.mean(axis=1)
    diff = mb - ma
    absm = np.abs(ma)
    scale = np.where(positive, RATIO, RELATIVE).astype(object)
    kind = np.where(positive, "fieller", "difference").astype(object)
    note = np.full(e, "", dtype=object)
    if k < 2:
        near0 = ~positive & (ma == 0)
        scale[near0] = ABSOLUTE
        with np.errstate(invalid="ignore", divide="ignore"):
            est = np.where(near0, diff * s, diff / absm)
        nan = np.full(e, np.nan)
        return Intervals(est, nan, nan.copy(), nan.copy(), ma * s, mb * s, scale, kind, note)
    q = 0.5 + confidence / 2
    t = special.stdtrit(k - 1, q)
    va = x.var(axis=1, ddof=1) / k
    vb = y.var(axis=1, ddof=1) / k
    cov = ((x - ma[:, None]) * (y - mb[:, None])).sum(axis=1) / (k - 1) / k
    d = y - x
    se = np.sqrt(d.var(axis=1, ddof=1) / k)
    exact = se == 0  # every block shows the same difference
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(
            exact, np.where(diff == 0, 1.0, 0.0), 2 * special.stdtr(k - 1, -np.abs(diff) / se)
        )
        near0 = ~positive & (absm <= t * np.sqrt(va))
        scale[near0] = ABSOLUTE
        div = np.where(near0, 1.0, absm)
        est = diff / div
        low = (diff - t * se) / div
        high = (diff + t * se) / div
    rows = positive & ~exact
    if rows.any():
        i = np.flatnonzero(rows)
        p[i] = component_p_value(mb[i], ma[i], vb[i], va[i], cov[i], k - 1)
        r_lo, r_hi, at_zero, at_inf = fieller_positive(mb[i], ma[i], vb[i], va[i], cov[i], t[i])
        if (at_zero | at_inf).any():
            _, _, l_lo, l_hi = log_ratio(mb[i], ma[i], vb[i], va[i], cov[i], k - 1, t[i])
            r_lo, r_hi = stand_in(
                r_lo, r_hi, at_zero, at_inf, mb[i] / ma[i], p[i] > 1 - confidence[i], l_lo, l_hi
            )
            note = add_note(note, np.isin(np.arange(e), i[at_zero]), "lower_unbounded")
            note = add_note(note, np.isin(np.arange(e), i[at_inf]), "upper_unbounded")
        low[i], high[i] = r_lo - 1.0, r_hi - 1.0
    low = np.where(exact, est, low)
    high = np.where(exact, est, high)
    kind[exact] = "exact"
    unit = np.where(near0, s, 1.0)
    iv = Intervals(est * unit, low * unit, high * unit, p, ma * s, mb * s, scale, kind, note)
    return reconcile(finite_or_reason(iv), confidence)


def block_means(values: Values, blocks: Sequence[Hashable]) -> dict[Hashable, float]:
    """The mean of each block's values (several runs of a variant in one block: one value)."""
    out: dict[Hashable, list[float]] = {}
    for v, blk in zip(values, blocks, strict=True):
        out.setdefault(blk, []).append(float(v))
    return {blk: float(np.mean(vs)) for blk, vs in out.items()}


class Paired:
    """Paired t-test of within-block differences, Fieller interval of the ratio of means."""

    name = "paired"
    description = "paired (blocked) analysis: within-block differences, Fieller ratio interval"

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return summarize(sample, confidence)

    def compare(
        self,
        baseline: Sequence[float],
        candidate: Sequence[float],
        confidence: float = 0.95,
        *,
        baseline_blocks: Sequence[Hashable] | None = None,
        candidate_blocks: Sequence[Hashable] | None = None,
    ) -> Comparison:
        """Block ids give each run's block (e.g. its repetition index in an interleaved
        plan); without them runs are paired by position (equal counts needed)."""
        a = as_sample(baseline)
        b = as_sample(candidate)
        warnings: list[StatWarning] = []
        if baseline_blocks is None and candidate_blocks is None:
            if a.size != b.size:
                raise ValueError(
                    "paired analysis without block ids needs as many baseline as candidate runs "
                    f"({a.size} vs {b.size}); pass the block of each run"
                )
            pa, pb = a, b
        else:
            if baseline_blocks is None or candidate_blocks is None:
                raise ValueError("give block ids for both baseline and candidate runs")
            if len(baseline_blocks) != a.size or len(candidate_blocks) != b.size:
                raise ValueError("one block id per run is needed")
            ma_blk = block_means(a, baseline_blocks)
            mb_blk = block_means(b, candidate_blocks)
            common = [blk for blk in ma_blk if blk in mb_blk]
            dropped = len(ma_blk) + len(mb_blk) - 2 * len(common)
            if dropped:
                warnings.append(
                    StatWarning(
                        "incomplete_blocks",
                        f"{dropped} block(s) hold runs of only one variant and were left out "
                        "of the paired analysis: re-run them (perflab run --resume) to use them",
                        {"dropped_blocks": dropped, "blocks": len(common)},
                    )
                )
            pa = np.array([ma_blk[blk] for blk in common])
            pb = np.array([mb_blk[blk] for blk in common])
            if pa.size == 0:
                raise ValueError("no block holds runs of both variants")
        res = paired_batch(pa, pb, confidence)
        if pa.size < 2:
            warnings.append(
                StatWarning(
                    "too_few_runs",
                    "a paired interval needs ≥ 2 complete blocks (≥ 5 for a trustworthy one)",
                    {"blocks": int(pa.size)},
                )
            )
        else:
            notes = res.notes(0)
            if "lower_unbounded" in notes or "upper_unbounded" in notes:
                warnings.append(
                    stand_in_warning("lower_unbounded" in notes, "upper_unbounded" in notes)
                )
            w = scale_warning(str(res.scale[0]), "mean", {"baseline_mean": float(res.baseline[0])})
            if w is not None:
                warnings.append(w)
            warnings += note_warnings(res, 0)
        return res.comparison(
            0,
            method=self.name,
            confidence=confidence,
            n_baseline=int(a.size),
            n_candidate=int(b.size),
            statistic="mean",
            warnings=tuple(warnings),
        )
