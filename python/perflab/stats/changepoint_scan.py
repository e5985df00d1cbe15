"""The search step of change-point detection: where in a segment of versions the runs
shift the most, and how surely, by a rank scan and a permutation test over runs.

Statistic. Within a segment of versions, every run is replaced by its rank among the
segment's runs (mid-ranks for ties). For a split τ between two versions and a scale w, the
runs of the w versions before τ (window A, clipped to the segment) are compared with those
of the w versions after it (window B) by the difference of their mean ranks, standardised
by its null standard deviation:

    Z(τ, w) = (mean rank of B − mean rank of A) / (s · √(1/n_A + 1/n_B))

(s the standard deviation of the segment's ranks, ties included; n_A, n_B the windows' run
counts). When the windows span the whole segment this is Mann–Whitney's z of all the runs
before τ against all after it (tie-corrected, no continuity correction). The scales are
``window``, twice that, four times… and the whole segment (`scales`): narrow windows see a
short-lived level or two changes of opposite sign close together, which the whole segment
averages away; wide ones gather every run of a long steady stretch. The statistic is the
largest |Z| over every split and scale, and the candidate is its split. Ranks make it blind
to how far a throttled run or a heavy tail lies, and to the scale of the values (negative
values, 1e-300 or 1e300 alike); the standardisation gives a split near an end of the
segment, with few runs on one side, the same chance as one in the middle.

Evidence. The p-value of "no change in the segment" is that of the maximum against its
permutation distribution: the segment's ranks shuffled over its runs (every run keeps its
version's slot; only which value lands where changes), |Z| recomputed at every split and
scale, ``permutations`` times: the maximum over all of them is what is calibrated, so
scanning many splits and scales costs no false alarms. Exchangeable runs are the null — the same assumption every
comparison of perflab makes about the runs of one variant. The scan of a permutation costs
one sum over each version's runs, so a thousand cost about as much as sorting the runs.
The permutations stop early (Besag & Clifford's sequential rule) once ``stop_after``
shuffles have reached the observed maximum: the p-value is then far above any α, and is
reported as (hits + 1)/(shuffles + 1) like every other.

Determinism: the shuffles of a segment are drawn from ``numpy.random.default_rng([seed,
start, stop])``, so a result depends on the seed and the data only, not on the order in
which segments were examined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from perflab.stats.arrays import FloatArray, IntArray

#: (first, split, last) versions of each (scale, split)'s windows, their run counts (2, K)
#: and 1/√(1/n_before + 1/n_after) (see `_windows`).
_Bounds = tuple[IntArray, IntArray, IntArray, FloatArray, FloatArray]

#: Shuffles drawn at a time (a block of ranks is permuted in one call).
BATCH = 128


@dataclass(frozen=True)
class Scan:
    """The best split of a segment of versions [start, stop).

    index:        the first version after the split (start < index < stop), or −1 when the
                  segment cannot be split (fewer than 2 versions, or every run tied).
    scale:        versions per side of the windows where |Z| was largest (0: no split).
    statistic:    max |Z| over the splits and scales (≥ 0): the standardised Mann–Whitney
                  statistic of the runs of the window before a split against the one after.
    p_value:      permutation p-value in (0, 1] of "no change in the segment":
                  (1 + shuffles reaching the statistic) / (1 + shuffles); 1.0 if no split.
    permutations: shuffles drawn (fewer than asked when they stopped early).
    """

    start: int
    stop: int
    index: int
    scale: int
    statistic: float
    p_value: float
    permutations: int


def scales(window: int, versions: int) -> list[int]:
    """Versions per side of the windows scanned in a segment of ``versions``: ``window``,
    twice that, four times…, and the whole segment (each side up to its ends)."""
    out = [window]
    while out[-1] < versions:
        out.append(min(2 * out[-1], versions))
    return out


def _windows(counts: IntArray, window: int) -> _Bounds:
    """Every split τ = 1…V−1 of a segment of V versions at every scale of `scales`: the
    version bounds of the windows [τ − w, τ) and [τ, τ + w) (clipped to the segment), their
    run counts (2, K), and 1/√(1/n_before + 1/n_after); K = (V − 1) × number of scales."""
    v = counts.size
    w = np.repeat(np.array(scales(window, v)), v - 1)
    tau = np.tile(np.arange(1, v), w.size // (v - 1))
    first = np.maximum(tau - w, 0)
    last = np.minimum(tau + w, v)
    cum = np.concatenate([[0], np.cumsum(counts)]).astype(np.float64)
    sizes = np.stack([cum[tau] - cum[first], cum[last] - cum[tau]])
    return first, tau, last, sizes, 1.0 / np.sqrt(1.0 / sizes[0] + 1.0 / sizes[1])


def _abs_z(ranks: FloatArray, starts: IntArray, bounds: _Bounds) -> FloatArray:
    """|Z| × sd of a rank at every (scale, split) of ``bounds``, per row of ``ranks``
    (…, N): runs in version order (the sd is the same for every row, split and scale)."""
    first, tau, last, sizes, weight = bounds
    sums = np.add.reduceat(ranks, starts, axis=-1)
    cum = np.concatenate([np.zeros(sums.shape[:-1] + (1,)), np.cumsum(sums, axis=-1)], axis=-1)
    before = (cum[..., tau] - cum[..., first]) / sizes[0]
    after = (cum[..., last] - cum[..., tau]) / sizes[1]
    z: FloatArray = np.abs(after - before) * weight
    return z


def scan_segment(
    runs: list[FloatArray],
    start: int,
    stop: int,
    *,
    window: int,
    permutations: int,
    seed: int,
    stop_after: int = 20,
) -> Scan:
    """The best split of versions [start, stop) of ``runs`` and its permutation p-value.

    runs: every version's runs (1-D float arrays, ≥ 1 value each), in version order.
    window: the narrowest windows, in versions on each side of a split (≥ 1).
    permutations: the most shuffles drawn (≥ 1); the p-value's floor is 1/(permutations + 1).
    stop_after: stop shuffling once this many shuffles reached the observed statistic.
    """
    if stop - start < 2:
        return Scan(start, stop, -1, 0, 0.0, 1.0, 0)
    counts = np.array([runs[v].size for v in range(start, stop)], dtype=np.intp)
    ranks = sps.rankdata(np.concatenate(runs[start:stop])).astype(np.float64)
    n = ranks.size
    sd = float(np.std(ranks)) * math.sqrt(n / (n - 1)) if n > 1 else 0.0
    if not sd > 0:  # every run tied: nothing can be told apart
        return Scan(start, stop, -1, 0, 0.0, 1.0, 0)
    bounds = _windows(counts, window)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    z = _abs_z(ranks, starts, bounds)
    best = int(np.argmax(z))
    # A shuffle's maximum that equals the observed one up to rounding counts as reaching it.
    bar = float(z[best]) * (1 - 1e-12)
    rng = np.random.default_rng([seed, start, stop])
    hits = drawn = 0
    while drawn < permutations and hits < stop_after:
        b = min(BATCH, permutations - drawn)
        shuffled = rng.permuted(np.broadcast_to(ranks, (b, n)), axis=1)
        hits += int(np.sum(_abs_z(shuffled, starts, bounds).max(axis=-1) >= bar))
        drawn += b
    index = int(bounds[1][best])
    scale = scales(window, counts.size)[best // (counts.size - 1)]
    return Scan(
        start, stop, start + index, scale, float(z[best]) / sd, (hits + 1) / (drawn + 1), drawn
    )
