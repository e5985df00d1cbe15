"""Scaling fit cost = a + b·n^k, per-unit cost and the degradation between variants."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import compare_scaling, fit_scaling

SIZES = np.array([100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000], dtype=float)


def _runs(rng, a, b, k, runs=30, cv=0.05):
    sizes = np.repeat(SIZES, runs)
    cost = (a + b * sizes**k) * (1 + cv * rng.standard_normal(sizes.size))
    return sizes, cost


def test_recovers_parameters_of_a_lookup_structure_like_workload():
    """Static array: 3 ms fixed, 84 ns per lookup (the lookup-structure experiment's 8.43 s
    per 100M lookups)."""
    rng = np.random.default_rng(1)
    fit = fit_scaling(*_runs(rng, 0.003, 8.4e-8, 1.0))
    assert fit.k.low < 1.0 < fit.k.high and fit.k.high - fit.k.low < 0.05
    pu = fit.per_unit()
    assert pu.low < 8.4e-8 < pu.high
    assert fit.a.low < 0.003 < fit.a.high
    assert fit.predict(1e7) == pytest.approx(0.003 + 0.84, rel=0.02)
    assert fit.to_dict()["largest_size"] == 1e7


def test_degradation_between_variants_with_its_interval():
    """R-B tree 5.6% more per lookup than the static array ("degradation 5.6% [..]")."""
    rng = np.random.default_rng(2)
    base = fit_scaling(*_runs(rng, 0.003, 8.4e-8, 1.0))
    tree = fit_scaling(*_runs(rng, 0.003, 8.4e-8 * 1.056, 1.0))
    c = compare_scaling(base, tree)
    assert c.low < 0.056 < c.high and c.significant
    # ≈ 2·1.96·√2·(5%/√30) ≈ 5% wide: the largest sizes carry the per-unit cost
    assert c.high - c.low < 0.06
    assert c.at == 1e7 and c.to_dict()["estimate"] == pytest.approx(c.estimate)
    # with the exponent known (linear), the per-unit cost is b itself: a narrower interval
    rng = np.random.default_rng(2)
    runs = [_runs(rng, 0.003, 8.4e-8 * f, 1.0) for f in (1.0, 1.056)]
    free = compare_scaling(*(fit_scaling(*r) for r in runs))
    lin = compare_scaling(*(fit_scaling(*r, exponent=1.0) for r in runs))
    assert lin.low < 0.056 < lin.high and lin.high - lin.low < free.high - free.low


def test_interval_coverage_by_simulation():
    """300 pairs of fits with known truth (exponent free): per-unit cost and degradation."""
    rng = np.random.default_rng(3)
    cover_pu = cover_deg = 0
    for _ in range(300):
        base = fit_scaling(*_runs(rng, 0.002, 1e-7, 1.0, runs=10))
        cand = fit_scaling(*_runs(rng, 0.002, 1.1e-7, 1.0, runs=10))
        pu = base.per_unit()
        cover_pu += pu.low <= 1e-7 <= pu.high
        c = compare_scaling(base, cand)
        cover_deg += c.low <= 0.1 <= c.high
    assert cover_pu / 300 >= 0.92
    assert cover_deg / 300 >= 0.92


def test_fixed_exponent_and_superlinear_costs():
    rng = np.random.default_rng(4)
    sizes, cost = _runs(rng, 0.01, 1e-9, 1.3)
    free = fit_scaling(sizes, cost)
    assert free.k.low < 1.3 < free.k.high
    lin = fit_scaling(sizes, cost, exponent=1.0)
    assert lin.exponent_fixed and lin.k.value == 1.0 and lin.k.low == lin.k.high == 1.0
    assert lin.reduced_chi2 > 10 and "poor_fit" in [w.code for w in lin.warnings]
    # a model that misfits gets wider intervals, not false precision
    assert (lin.b.high - lin.b.low) / lin.b.value > 3 * (free.b.high - free.b.low) / free.b.value


def test_bad_inputs():
    with pytest.raises(ValueError, match="≥ 2 runs per size"):
        fit_scaling([1, 2, 3, 4], [1.0, 2, 3, 4])
    with pytest.raises(ValueError, match="distinct sizes"):
        fit_scaling([1, 1, 2, 2, 3, 3], [1.0, 1.1, 2, 2.1, 3, 3.1])
    with pytest.raises(ValueError, match="positive"):
        fit_scaling([0, 0, 1, 1], [1.0, 1, 2, 2], exponent=1.0)


def test_a_flat_metric_gives_unbounded_ends_not_an_overflow():
    """Reported: fitting the exponent of a metric that does not grow (a mean of 100, 1%
    noise, sizes 1K…10M) raised OverflowError from the interval of b."""
    import math

    from perflab.stats.scaling import fit_scaling

    sizes = [1e3, 1e4, 1e5, 1e6, 1e7] * 5
    for seed in range(200):
        rng = np.random.default_rng(seed)
        fit = fit_scaling(sizes, list(100 * (1 + 0.01 * rng.standard_normal(len(sizes)))))
        if not math.isnan(fit.b.low):  # NaN: undefined, and a warning says why
            assert fit.b.low <= fit.b.value <= fit.b.high
        else:
            assert fit.warnings
