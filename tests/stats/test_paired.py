"""Paired (blocked) analysis: the paired t-test, Fieller with covariance, drift removal."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import Paired, get_method
from perflab.stats.paired import paired_batch
from perflab.stats.welch import welch_batch
from scipy import stats as sps


def test_p_value_is_scipys_paired_t_test():
    rng = np.random.default_rng(1)
    for _ in range(100):
        k = rng.integers(2, 30)
        a = rng.normal(100, 5, k)
        b = a * (1 + rng.normal(0.01, 0.02, k))
        c = Paired().compare(a, b)
        assert c.p_value == pytest.approx(sps.ttest_rel(b, a).pvalue, rel=1e-9)


def test_interval_is_the_set_of_ratios_a_paired_test_does_not_reject():
    rng = np.random.default_rng(2)
    a = rng.normal(100, 5, 8)
    b = a * 1.05 + rng.normal(0, 1, 8)
    c = Paired().compare(a, b, 0.9)
    grid = np.linspace(c.low - 0.02, c.high + 0.02, 40001) + 1
    p = sps.ttest_1samp(b[None, :] - grid[:, None] * a[None, :], 0, axis=1).pvalue
    inside = grid[p >= 0.1]
    step = grid[1] - grid[0]
    assert inside.min() - 1 == pytest.approx(c.low, abs=step)
    assert inside.max() - 1 == pytest.approx(c.high, abs=step)


def test_much_narrower_than_unpaired_when_blocks_drift():
    """3% drift between blocks, 1% run noise, 10 blocks, 2,000 experiments."""
    rng = np.random.default_rng(3)
    e, k = 2000, 10
    drift = 1 + 0.03 * rng.standard_normal((e, k))
    a = 100 * drift * (1 + 0.01 * rng.standard_normal((e, k)))
    b = 102 * drift * (1 + 0.01 * rng.standard_normal((e, k)))
    p, w = paired_batch(a, b), welch_batch(a, b)
    ratio = np.median((p.high - p.low) / (w.high - w.low))
    assert ratio < 0.4
    assert np.mean(p.significant) > 0.9 > 0.3 > np.mean(w.significant)
    assert np.mean(p.covers(0.02)) >= 0.935


def test_no_drift_costs_little():
    rng = np.random.default_rng(4)
    a = 100 * (1 + 0.02 * rng.standard_normal((2000, 10)))
    b = 103 * (1 + 0.02 * rng.standard_normal((2000, 10)))
    assert np.mean(paired_batch(a, b).significant) > np.mean(welch_batch(a, b).significant) - 0.06


def test_block_ids_pair_runs_and_incomplete_blocks_are_reported():
    base = [10.0, 20.0, 30.0, 40.0, 11.0]
    cand = [31.0, 11.5, 21.0]
    c = Paired().compare(base, cand, baseline_blocks=[1, 2, 3, 4, 1], candidate_blocks=[3, 1, 2])
    # block 1: baseline mean 10.5 vs 11.5; block 2: 20 vs 21; block 3: 30 vs 31; block 4 dropped
    assert c.estimate == pytest.approx((11.5 + 21 + 31) / (10.5 + 20 + 30) - 1)
    (w,) = c.warnings
    assert w.code == "incomplete_blocks" and w.details == {"dropped_blocks": 1, "blocks": 3}
    assert c.p_value == 0.0 and c.low == c.high  # every block shows exactly +1


def test_unaligned_runs_without_blocks_are_refused():
    with pytest.raises(ValueError, match="block"):
        get_method("paired").compare([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="both"):
        Paired().compare([1.0, 2.0], [1.0, 2.0], baseline_blocks=[1, 2])
