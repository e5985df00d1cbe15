"""Which end of a bisect's range a candidate is like, decided block by block.

A bisect step runs the candidate commit between the range's good and bad ends in
interleaved blocks: each block holds one run (or the mean of its runs) of good, candidate
and bad, close together in time. Two paired intervals (`paired.paired_batch`: the blocks'
own drift cancels, and a shared machine drifts a lot) answer the question:

- **the ends**: bad against good — the regression the range holds;
- **the position**: the candidate against the mean of the two ends *in its block*,
  ``(good + bad) / 2``. A candidate with the regression sits half of it on bad's side of
  that mean, one without it half of it on good's: the position's interval lying wholly
  on one side of 0 says which end the candidate is like.

This is a sequential test (`nearer_end` is asked after every block, and the step stops as
soon as it answers), so its errors are those of the whole sequence of looks, not of one
test. A candidate equal to one end is ±R/2 from the mean — the interval must cross from
the wrong side of 0 to be called wrongly, which the simulation in
tests/stats/test_bisection.py finds in fewer than 1 step in 1,000 for the noise levels
of the lab's router (5–15% run to run, block drift, heavy tails) over up to 30 looks. The
ends must differ at the stricter `ENDS_CONFIDENCE`, so that a range holding no regression
(where every candidate sits at 0, and repeated looks would sooner or later call one
side) is rarely taken for one. A candidate whose change is spread (half the regression in
it) has no side; a sequential test may still call one, which is the honest answer of a
bisect for a spread change — either half is a commit that made it worse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from perflab.stats.arrays import FloatArray, ObjectArray
from perflab.stats.intervals import Intervals
from perflab.stats.paired import paired_batch

#: The confidence at which the ends must differ before a side is called.
ENDS_CONFIDENCE = 0.99
#: What `nearer_end` answers.
GOOD, BAD = "good", "bad"


@dataclass(frozen=True)
class Interval:
    """A paired change (fractions: -0.05 = −5%) and its two-sided p-value."""

    estimate: float
    low: float
    high: float
    p_value: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Position:
    """A step's blocks read: ``ends`` (bad against good, at `ENDS_CONFIDENCE`),
    ``position`` (the candidate against the ends' mean per block, at ``confidence``),
    the number of complete ``blocks``, and ``side``: the end the candidate is like
    (`GOOD`, `BAD`), or None while the blocks cannot tell."""

    ends: Interval
    position: Interval
    blocks: int
    confidence: float
    side: str | None

    @property
    def share(self) -> float | None:
        """The candidate's place between the ends: 0 at good, 1 at bad (its estimate)."""
        if not self.ends.estimate:
            return None
        # the ends' mean is at 1/2; the position is measured from it in units of the
        # ends' mean, which is (1 + R/2) of good: candidate/good − 1 ≈ position·(1+R/2)+R/2
        r = self.ends.estimate
        return ((1 + self.position.estimate) * (1 + r / 2) - 1) / r


def nearer_end(
    good: FloatArray,
    candidate: FloatArray,
    bad: FloatArray,
    *,
    higher_is_better: bool,
    confidence: float = 0.95,
) -> Position:
    """The end ``candidate`` is like, from one value per block of each (positive values,
    block j at index j of all three; at least 2 blocks).

    The ends must differ in the worse direction (bad below good when higher is better) at
    `ENDS_CONFIDENCE`, and the position's interval at ``confidence`` must lie on one side
    of 0: on bad's side the candidate holds the regression (`BAD`), on good's it does not
    (`GOOD`)."""
    g, c, b = (np.asarray(x, dtype=np.float64) for x in (good, candidate, bad))
    if not (g.shape == c.shape == b.shape) or g.ndim != 1:
        raise ValueError(
            f"one value per block of each variant is needed: {g.shape}, {c.shape}, {b.shape}"
        )
    ends, position, side = nearer_end_batch(
        g[None, :],
        c[None, :],
        b[None, :],
        higher_is_better=higher_is_better,
        confidence=confidence,
    )
    return Position(_interval(ends), _interval(position), int(g.size), confidence, side[0] or None)


class Positions(NamedTuple):
    """`Position` of E steps at once (`nearer_end_batch`): one row per step."""

    ends: Intervals  # bad against good, at `ENDS_CONFIDENCE`
    position: Intervals  # the candidate against the ends' mean per block
    side: ObjectArray  # `GOOD`, `BAD` or "" while the blocks cannot tell


def nearer_end_batch(
    good: FloatArray,
    candidate: FloatArray,
    bad: FloatArray,
    *,
    higher_is_better: bool,
    confidence: float = 0.95,
) -> Positions:
    """`nearer_end` for E steps at once: (E, k) arrays, row i the blocks of step i.
    Returns the ends' and the positions' intervals and each row's side ("" for none)."""
    g, c, b = good, candidate, bad
    if g.shape[-1] < 2:
        raise ValueError(f"at least 2 complete blocks are needed (got {g.shape[-1]})")
    if not (np.all(g > 0) and np.all(c > 0) and np.all(b > 0)):
        raise ValueError("the position between the ends needs positive values")
    ends = paired_batch(g, b, ENDS_CONFIDENCE)
    position = paired_batch((g + b) / 2, c, confidence)
    worse = -1.0 if higher_is_better else 1.0
    regression = (np.sign(ends.estimate) == worse) & ((ends.low > 0) | (ends.high < 0))
    decided = regression & ((position.low > 0) | (position.high < 0))
    side = np.full(g.shape[0], "", dtype=object)
    side[decided & (np.sign(position.estimate) == worse)] = BAD
    side[decided & (np.sign(position.estimate) != worse)] = GOOD
    return Positions(ends, position, side)


def _interval(iv: Intervals) -> Interval:
    return Interval(
        float(iv.estimate[0]), float(iv.low[0]), float(iv.high[0]), float(iv.p_value[0])
    )
