"""Which end a bisect candidate is like (`stats.bisection`), checked by simulation.

Each simulated step is a sequence of blocks (good, candidate, bad) with a known truth —
the candidate is good, or bad, or the range holds no regression — on the noise the lab's
router shows (5–15% run to run on the log scale, a drift shared by the runs of a block,
heavy tails, throttled runs), asked after every block from the 4th to the 30th as the
runner does, the first answer kept. The rule may take long or not answer (the step then
falls back to the comparisons); it must almost never answer wrongly."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats.bisection import BAD, GOOD, nearer_end, nearer_end_batch

STEPS = 2000
FIRST, LAST = 4, 30


def _steps(regression, sigma, family, truth, *, drift=0.05, seed=0):
    """(first answer, blocks it took) of ``STEPS`` simulated steps: the candidate carries
    ``truth`` of the ``regression`` (0: it is good, 1: it is bad)."""
    rng = np.random.default_rng(seed)
    shape = (STEPS, LAST)

    def runs(mean):
        if family == "normal":
            z = rng.standard_normal(shape)
        elif family == "t3":  # heavy tails, unit variance
            z = rng.standard_t(3, shape) / np.sqrt(3)
        else:  # throttled: one run in twenty at half speed
            z = rng.standard_normal(shape) - np.log(2) / sigma * (rng.random(shape) < 0.05)
        return mean * shared * np.exp(sigma * z)

    shared = np.exp(drift * rng.standard_normal(shape))
    g, b = runs(1e4), runs(1e4 * (1 - regression))
    c = runs(1e4 * (1 - truth * regression))
    first = np.full(STEPS, "", dtype=object)
    blocks = np.full(STEPS, LAST)
    for k in range(FIRST, LAST + 1):
        *_, side = nearer_end_batch(g[:, :k], c[:, :k], b[:, :k], higher_is_better=True)
        new = (first == "") & (side != "")
        first[new], blocks[new] = side[new], k
    return first, blocks


NOISE = [
    (0.10, 0.03, "normal"),
    (0.10, 0.08, "normal"),
    (0.10, 0.08, "t3"),
    (0.10, 0.08, "throttled"),
    (0.15, 0.08, "normal"),
    (0.15, 0.12, "t3"),
    (0.05, 0.08, "normal"),
    (0.05, 0.12, "throttled"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("regression", "sigma", "family"), NOISE)
def test_a_candidate_is_almost_never_called_the_wrong_end(regression, sigma, family):
    wrong = []
    for truth, right, other in ((0, GOOD, BAD), (1, BAD, GOOD)):
        seed = int(regression * 1e3 + sigma * 1e2) + truth
        first, _ = _steps(regression, sigma, family, truth, seed=seed)
        wrong.append(np.mean(first == other))
        assert np.mean(first == right) > 0, "the rule never answered: nothing was tested"
    # 1% is 20 of 2,000 steps; the rule's rate is ~0.1% (0.6% at worst: 5% in 12% noise)
    assert max(wrong) <= 0.01, wrong


@pytest.mark.slow
def test_a_regression_well_above_the_noise_is_told_in_few_blocks():
    """15% in 8% run-to-run noise (the lab's router on a quiet machine): nearly every step
    answers, right, in about ten blocks; 10% in 3%, in about five."""
    for regression, sigma, at_most in ((0.15, 0.08, 12), (0.10, 0.03, 7)):
        for truth, right in ((0, GOOD), (1, BAD)):
            first, blocks = _steps(regression, sigma, "normal", truth, seed=7 + truth)
            assert np.mean(first == right) >= 0.99
            assert np.mean(blocks) <= at_most


@pytest.mark.slow
def test_drift_between_blocks_costs_nothing():
    """The blocks' shared drift cancels: 30% drift decides as fast as 1%."""
    calm = _steps(0.10, 0.05, "normal", 1, drift=0.01, seed=3)
    drifting = _steps(0.10, 0.05, "normal", 1, drift=0.30, seed=3)
    assert np.mean(drifting[0] == BAD) >= np.mean(calm[0] == BAD) - 0.02
    assert np.mean(drifting[1]) <= np.mean(calm[1]) + 1


@pytest.mark.slow
def test_a_range_without_regression_is_rarely_taken_for_one():
    for family in ("normal", "t3"):
        first, _ = _steps(0.0, 0.08, family, 0, seed=11)
        assert np.mean(first != "") <= 0.01


def test_a_lower_is_better_metric_reads_the_other_way():
    good = np.array([10.0, 10.2, 9.9, 10.1, 10.0, 10.05])
    bad = good * 1.2  # slower: worse
    side = nearer_end(good, bad * 1.01, bad, higher_is_better=False)
    assert side.side == BAD and side.position.estimate > 0
    assert nearer_end(good, good * 0.99, bad, higher_is_better=False).side == GOOD
    # read as higher-is-better, bad is the better end: no regression, no side
    assert nearer_end(good, bad, bad, higher_is_better=True).side is None


def test_the_answer_agrees_with_its_intervals():
    rng = np.random.default_rng(5)
    for _ in range(300):
        k = int(rng.integers(2, 20))
        g = 100 * np.exp(0.05 * rng.standard_normal(k))
        b = 90 * np.exp(0.05 * rng.standard_normal(k))
        c = rng.choice([100.0, 90.0, 95.0]) * np.exp(0.05 * rng.standard_normal(k))
        p = nearer_end(g, c, b, higher_is_better=True)
        regression = p.ends.high < 0
        if p.side is None:
            assert not regression or p.position.low <= 0 <= p.position.high
        else:
            assert regression and p.position.excludes_zero()
            assert (p.side == BAD) == (p.position.high < 0)
            assert (p.position.p_value <= 0.05) and (p.ends.p_value <= 0.01)
        share = p.share
        assert share is not None and np.isfinite(share)


def test_the_share_places_the_candidate_between_the_ends():
    g = np.array([100.0, 101.0, 99.0, 100.0])
    b = g * 0.9
    assert nearer_end(g, g, b, higher_is_better=True).share == pytest.approx(0.0, abs=1e-9)
    assert nearer_end(g, b, b, higher_is_better=True).share == pytest.approx(1.0, abs=1e-9)
    assert nearer_end(g, g * 0.95, b, higher_is_better=True).share == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize(
    ("good", "candidate", "bad", "message"),
    [
        ([1.0, 2.0], [1.0], [1.0, 2.0], "one value per block"),
        ([1.0], [1.0], [1.0], "at least 2 complete blocks"),
        ([1.0, -2.0], [1.0, 2.0], [1.0, 2.0], "positive values"),
    ],
)
def test_bad_input_says_what_is_wrong(good, candidate, bad, message):
    with pytest.raises(ValueError, match=message):
        nearer_end(good, candidate, bad, higher_is_better=True)
