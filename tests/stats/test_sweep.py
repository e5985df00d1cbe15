"""Sweep summary (the kernel-bypass memcached scaling experiment's "average gain across 1..28
instances"): geometric-mean ratio."""

from __future__ import annotations

import math

import numpy as np
import pytest
from perflab.stats import sweep_summary


def _sweep(rng, ratios, n=10, cv=0.05):
    return [
        (
            rng.normal(100 * (i + 1), 100 * (i + 1) * cv, n),
            rng.normal(100 * (i + 1) * r, 100 * (i + 1) * r * cv, n),
        )
        for i, r in enumerate(ratios)
    ]


def test_memcached_scaling_like_sweep():
    """28 instance counts, gains between 2.5× and 4×: "+2xx% [..]" with a narrow interval."""
    rng = np.random.default_rng(1)
    ratios = np.linspace(2.5, 4.0, 28)
    s = sweep_summary(_sweep(rng, ratios))
    truth = math.exp(np.mean(np.log(ratios)))
    assert s.cells == 28 and s.low < truth < s.high
    assert s.change == pytest.approx(truth - 1, abs=0.03)
    assert (s.high - s.low) / s.ratio < 0.03  # ±1.5%: averaging 28 cells
    assert s.i_squared > 0.9  # the gain varies along the sweep, far beyond run noise
    assert len(s.cell_ratios) == 28 and s.to_dict()["change_low"] == pytest.approx(s.low - 1)


def test_coverage_of_the_geometric_mean_ratio():
    """1,000 sweeps of 8 cells with different true ratios, 5 runs per variant, 5% noise."""
    rng = np.random.default_rng(2)
    ratios = np.array([0.9, 1.0, 1.1, 1.3, 1.5, 2.0, 2.5, 3.0])
    truth = math.exp(np.mean(np.log(ratios)))
    hits = [sweep_summary(_sweep(rng, ratios, n=5)) for _ in range(1000)]
    coverage = np.mean([h.low <= truth <= h.high for h in hits])
    assert 0.935 <= coverage <= 0.975


def test_equal_weights_and_symmetry():
    rng = np.random.default_rng(3)
    cells = _sweep(rng, [2.0, 0.5])
    s = sweep_summary(cells)
    assert s.ratio == pytest.approx(math.sqrt(s.cell_ratios[0] * s.cell_ratios[1]))


def test_bad_cells():
    with pytest.raises(ValueError, match="at least one cell"):
        sweep_summary([])
    with pytest.raises(ValueError, match="cell 1"):
        sweep_summary([([1.0, 2.0], [2.0, 3.0]), ([1.0], [2.0, 3.0])])
    with pytest.raises(ValueError, match="positive"):
        sweep_summary([([-1.0, -2.0], [2.0, 3.0])])


def test_p_value_agrees_with_the_interval_at_every_level_and_any_magnitude():
    rng = np.random.default_rng(4)
    for _ in range(50):
        cells = _sweep(rng, rng.uniform(0.97, 1.05, 4), n=5)
        for level in (0.8, 0.95, 0.999):
            s = sweep_summary(cells, level)
            assert (s.low > 1 or s.high < 1) == (s.p_value <= 1 - level)
    huge = [(a * 1e300, b * 1e300) for a, b in _sweep(rng, [1.1, 1.2])]
    s = sweep_summary(huge)
    assert 0 < s.low < s.ratio < s.high and s.to_dict()["p_value"] == s.p_value
