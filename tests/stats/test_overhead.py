"""Overhead subtraction (the lookup-structure experiment's random() calibration, hyperfine's
shell correction)."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import compare_net, subtract_overhead


def test_net_time_and_propagated_uncertainty():
    rng = np.random.default_rng(1)
    # the lookup-structure experiment: random() ≈ 2.03 s per 100M calls
    overhead = rng.normal(2.03, 0.05, 100)
    measured = rng.normal(8.43, 0.19, 100) + rng.normal(2.03, 0.05, 100)
    net = subtract_overhead(measured, overhead)
    assert net.mean == pytest.approx(8.43, abs=0.1)
    assert net.low < 8.43 < net.high
    half = (net.high - net.low) / 2
    se = np.sqrt(measured.var(ddof=1) / 100 + overhead.var(ddof=1) / 100)
    assert half == pytest.approx(1.97 * se, rel=0.02)  # both samples' noise, t quantile
    assert net.corrected == pytest.approx(tuple(measured - overhead.mean()))
    assert net.overhead_share == pytest.approx(2.03 / 10.46, abs=0.01)
    assert not net.warnings


def test_coverage_of_net_time_and_of_the_net_change():
    """2,000 simulations: measured = overhead + work; truth known for both questions."""
    rng = np.random.default_rng(2)
    e, n = 2000, 10
    o = rng.normal(5.0, 0.5, (e, n))
    a = 5.0 + rng.normal(10.0, 0.5, (e, n))
    b = 5.0 + rng.normal(11.0, 0.5, (e, n))  # net +10%, gross only +6.7%
    cover_net = cover_change = 0
    for i in range(e):
        r = subtract_overhead(a[i], o[i])
        cover_net += r.low <= 10.0 <= r.high
        c = compare_net(a[i], b[i], o[i])
        cover_change += c.low <= 0.10 <= c.high
    assert 0.935 <= cover_net / e <= 0.97
    assert 0.935 <= cover_change / e <= 0.97


def test_net_change_is_larger_than_the_gross_one_and_shares_the_welch_p_value():
    from perflab.stats import Welch

    rng = np.random.default_rng(3)
    o = rng.normal(5.0, 0.1, 10)
    a, b = 5 + rng.normal(10, 0.2, 10), 5 + rng.normal(11, 0.2, 10)
    net, gross = compare_net(a, b, o), Welch().compare(a, b)
    assert net.estimate == pytest.approx(0.10, abs=0.02) and gross.estimate == pytest.approx(
        0.067, abs=0.01
    )
    assert net.estimate > 1.4 * gross.estimate
    # the overhead cancels from the difference: the same test as Welch's (df may differ a little)
    a2, b2 = 5 + rng.normal(10, 0.2, 10), 5 + rng.normal(10.15, 0.2, 10)
    assert compare_net(a2, b2, o).p_value == pytest.approx(Welch().compare(a2, b2).p_value, rel=0.1)
    assert net.interval == "fieller" and net.statistic == "net mean"


def test_warnings_when_the_overhead_dominates_or_swamps_the_work():
    rng = np.random.default_rng(4)
    o = rng.normal(10.0, 1.0, 10)
    r = subtract_overhead(o + rng.normal(0.2, 0.5, 10), o[::-1].copy())
    assert {w.code for w in r.warnings} == {"overhead_dominates", "overhead_indistinguishable"}
    with pytest.raises(ValueError, match="≥ 2"):
        subtract_overhead([1.0, 2.0], [1.0])


def test_net_change_is_defined_once_and_agrees_with_its_test():
    """Positive net times: a ratio (Fieller, never below −100%); a baseline net time within
    its noise of zero: the change of the means in the unit, flagged."""
    rng = np.random.default_rng(5)
    o = rng.normal(5.0, 0.1, 10)
    c = compare_net(5 + rng.normal(10, 0.2, 10), 5 + rng.normal(11, 0.2, 10), o)
    assert c.scale == "ratio" and c.low > -1 and c.significant == (c.p_value <= 0.05)
    c = compare_net([5.1, 5.2, 4.9], [6.0, 6.1, 5.9], [5.0, 5.1, 5.05])
    assert c.scale == "absolute" and "absolute_change" in [w.code for w in c.warnings]
    assert c.low <= c.estimate <= c.high and c.significant == (c.p_value <= 0.05)
