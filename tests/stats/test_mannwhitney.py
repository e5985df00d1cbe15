"""Mann–Whitney / Hodges–Lehmann: p-values against scipy, intervals against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from perflab.stats import MannWhitney
from perflab.stats.mannwhitney import _exact_k, mannwhitney_batch, median_interval, u_cdf
from scipy import stats as sps


def test_u_distribution_matches_enumeration():
    n, m = 4, 5
    counts = np.zeros(n * m + 1)
    for pos in itertools.combinations(range(n + m), n):  # positions of x in the merged order
        u = sum(p - i for i, p in enumerate(pos))  # number of y below each x
        counts[u] += 1
    assert np.allclose(u_cdf(n, m), np.cumsum(counts) / math.comb(n + m, n))


def test_exact_p_values_match_scipy():
    rng = np.random.default_rng(1)
    for _ in range(100):
        n, m = rng.integers(2, 25, 2)
        a = rng.normal(10, 1, n)
        b = rng.normal(10 + rng.normal(0, 0.7), 1, m)
        got = mannwhitney_batch(a, b, scale="shift").p_value[0]
        assert got == pytest.approx(sps.mannwhitneyu(b, a, method="exact").pvalue, rel=1e-9)


def test_tied_p_values_match_scipy_asymptotic():
    rng = np.random.default_rng(2)
    for _ in range(50):
        a = rng.integers(0, 6, rng.integers(5, 30)).astype(float) + 10
        b = rng.integers(0, 6, rng.integers(5, 30)).astype(float) + 10.5 * rng.integers(0, 2)
        got = mannwhitney_batch(a, b, scale="shift").p_value[0]
        ref = sps.mannwhitneyu(b, a, method="asymptotic", use_continuity=True).pvalue
        assert got == pytest.approx(ref, rel=1e-9)


def test_estimate_is_the_median_of_pairwise_differences_over_the_baseline_median():
    rng = np.random.default_rng(3)
    a, b = rng.normal(50, 3, 9), rng.normal(53, 3, 7)
    c = MannWhitney("shift").compare(a, b)
    hl = np.median(np.subtract.outer(b, a))
    assert c.estimate == pytest.approx(hl / np.median(a))
    r = MannWhitney("ratio").compare(a, b)
    assert r.estimate == pytest.approx(
        np.exp(np.median(np.subtract.outer(np.log(b), np.log(a)))) - 1
    )
    assert MannWhitney().compare(a, b).statistic == "hl-ratio"  # auto: positive runs


def test_exact_interval_is_the_set_of_shifts_the_exact_test_does_not_reject():
    """Moses' interval = {Δ : the exact two-sided test of b − Δ vs a gives p > α} (up to ties at ends)."""
    rng = np.random.default_rng(4)
    for _ in range(10):
        a, b = rng.normal(20, 2, 7), rng.normal(22, 2, 8)
        c = MannWhitney("shift").compare(a, b, 0.95)
        med = np.median(a)
        lo, hi = c.low * med, c.high * med
        diffs = np.sort(np.subtract.outer(b, a).ravel())
        mids = (diffs[:-1] + diffs[1:]) / 2  # shifts between consecutive differences (no ties)
        accepted = [d for d in mids if sps.mannwhitneyu(b - d, a, method="exact").pvalue > 0.05]
        assert min(accepted) == pytest.approx((lo + diffs[np.searchsorted(diffs, lo) + 1]) / 2)
        assert max(accepted) == pytest.approx((hi + diffs[np.searchsorted(diffs, hi) - 1]) / 2)


def test_interval_level_is_at_least_the_requested_one():
    cdf = u_cdf(5, 5)
    k = _exact_k(5, 5, 0.05)
    assert k == 3 and 1 - 2 * cdf[k - 1] == pytest.approx(0.9683, abs=1e-4)  # as R's wilcox.test
    assert _exact_k(3, 3, 0.05) == 0  # no 95% interval exists with 3 runs each


def test_too_few_runs_and_ties_are_said():
    c = MannWhitney().compare([1.0, 2, 3], [2.0, 3, 4])
    assert (
        not c.defined
        and c.warnings[0].code == "too_few_runs"
        and c.warnings[0].details["needed"] == 4
    )
    c = MannWhitney().compare([1.0, 1, 2, 2, 3], [2.0, 2, 3, 3, 4])
    assert "ties" in [w.code for w in c.warnings] and c.interval == "normal-approx"


def test_median_interval_from_order_statistics():
    x = np.arange(1.0, 11.0)
    lo, hi = median_interval(x, 0.95)
    assert (lo, hi) == (2.0, 9.0)  # P(Bin(10, ½) ≤ 1) = 0.0107 ≤ 0.025 < P(≤ 2)
    assert all(math.isnan(v) for v in median_interval(x[:5], 0.95))
    loc = MannWhitney().summary(x).location
    assert (loc.statistic, loc.low, loc.high, loc.interval) == (
        "median",
        2.0,
        9.0,
        "order-statistics",
    )


def test_shift_scale_protects_itself_from_nonpositive_data():
    c = MannWhitney().compare([-1.0, 0.5, 1.0, 2.0], [0.0, 1.5, 2.0, 3.0])
    assert c.statistic == "hl-shift"  # auto falls back to the shift for non-positive runs
    with pytest.raises(ValueError, match="positive"):
        MannWhitney("ratio").compare([-1.0, 0.5, 1.0, 2.0], [0.0, 1.5, 2.0, 3.0])


def test_shift_over_the_median_under_covers_large_changes_and_warns():
    """Why the ratio scale is the default: a +30% change, n = 30 (2,000 experiments each).
    The shift over an estimated median loses coverage; compare() says so."""
    from tests.stats import sim

    rng = np.random.default_rng(9)
    a, b = sim.pair("normal", rng, 2000, 30, 0.30, "shift")
    shift = mannwhitney_batch(a, b, scale="shift")
    assert np.mean(shift.covers(0.30)) < 0.925
    a, b = sim.pair("normal", rng, 2000, 30, 0.30, "scale")
    assert np.mean(mannwhitney_batch(a, b).covers(0.30)) >= 0.935
    warned = [
        ("baseline_uncertainty" in [w.code for w in MannWhitney("shift").compare(x, y).warnings])
        for x, y in zip(a[:40], b[:40])
    ]
    assert np.mean(warned) > 0.5


def test_tied_interval_is_the_set_of_shifts_the_tie_corrected_test_does_not_reject():
    """Integer data: the interval spans exactly the observed differences (and midpoints)
    at which scipy's tie-corrected asymptotic test of b − θ vs a gives p > α; p at 0 is that
    test's own p-value."""
    rng = np.random.default_rng(6)
    for _ in range(40):
        a = rng.integers(0, 6, 9).astype(float)
        b = rng.integers(1, 7, 11).astype(float)
        c = MannWhitney("shift").compare(a, b, 0.9)
        assert c.scale in ("relative", "absolute")
        k = abs(np.median(a)) if c.scale == "relative" else 1.0
        lo, hi = c.low * k, c.high * k
        d = np.unique(np.subtract.outer(b, a))
        grid = np.unique(np.concatenate([d, (d[:-1] + d[1:]) / 2]))
        p = np.array([sps.mannwhitneyu(b - t, a, method="asymptotic").pvalue for t in grid])
        accepted = grid[p > 0.1]
        assert accepted.min() == pytest.approx(lo) and accepted.max() == pytest.approx(hi)
        if c.estimate == 0:  # the interval holds its estimate, 0, at every level: p = 1
            assert c.p_value == 1.0
        else:
            assert c.p_value == pytest.approx(sps.mannwhitneyu(b, a, method="asymptotic").pvalue)
        assert c.significant == (c.p_value <= 0.1)
