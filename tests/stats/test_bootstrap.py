"""BCa bootstrap: formulas cross-checked against scipy, protections, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import Bootstrap, get_method
from perflab.stats.bca import bca_interval, jackknife_acceleration
from perflab.stats.bootstrap import _loo_stats, _resampled_stats, bootstrap_batch, min_runs
from perflab.stats.statistic import parse_statistic
from scipy import special
from scipy import stats as sps

from tests.stats import sim

B = 40_000  # many resamples on both sides so that Monte-Carlo error stays far below tolerance


def _plain_two_sample_bca(a, b, stat_name, confidence, rng):
    """perflab's BCa core with the textbook (scipy) choices: jackknife acceleration, z quantile."""
    st = parse_statistic(stat_name)
    a2, b2 = a[None, :], b[None, :]
    sa, sb = st.fn(a2), st.fn(b2)
    est = sb / sa - 1
    boot = _resampled_stats(b2, st, B, rng) / _resampled_stats(a2, st, B, rng) - 1
    jack = [sb[:, None] / _loo_stats(a2, st) - 1, _loo_stats(b2, st) / sa[:, None] - 1]
    z = special.ndtri(0.5 + confidence / 2)
    lo, hi, _ = bca_interval(est, boot, jackknife_acceleration(jack), z)
    return float(lo[0]), float(hi[0])


@pytest.mark.parametrize("stat_name", ["mean", "median"])
def test_two_sample_bca_core_matches_scipy_bootstrap(stat_name):
    rng = np.random.default_rng(5)
    fn = np.mean if stat_name == "mean" else np.median
    for _ in range(6):
        a = rng.lognormal(0, 0.3, rng.integers(12, 25))
        b = rng.lognormal(0.1, 0.3, rng.integers(12, 25))
        ref = sps.bootstrap(
            (a, b),
            lambda x, y, axis=-1: fn(y, axis=axis) / fn(x, axis=axis) - 1,
            method="BCa",
            n_resamples=B,
            confidence_level=0.9,
            random_state=rng,
            vectorized=True,
        ).confidence_interval
        lo, hi = _plain_two_sample_bca(a, b, stat_name, 0.9, rng)
        width = ref.high - ref.low
        assert lo == pytest.approx(ref.low, abs=0.04 * width)
        assert hi == pytest.approx(ref.high, abs=0.04 * width)


def test_one_sample_summary_interval_matches_scipy_bootstrap():
    rng = np.random.default_rng(6)
    for stat_name, fn in (
        ("mean", np.mean),
        ("median", np.median),
        ("p75", lambda x, axis: np.quantile(x, 0.75, axis=axis)),
    ):
        x = rng.gamma(3.0, 2.0, 40)
        ref = sps.bootstrap(
            (x,), fn, method="BCa", n_resamples=B, random_state=rng
        ).confidence_interval
        loc = Bootstrap(stat_name, resamples=B, seed=1, expand=False).summary(x).location
        width = ref.high - ref.low
        assert loc.statistic == parse_statistic(stat_name).name
        assert loc.low == pytest.approx(ref.low, abs=0.04 * width)
        assert loc.high == pytest.approx(ref.high, abs=0.04 * width)


def test_expanded_summary_is_wider_than_plain_by_about_t_over_z():
    x = np.random.default_rng(7).normal(100, 5, 6)
    plain = Bootstrap(expand=False).summary(x).location
    wide = Bootstrap().summary(x).location
    ratio = (wide.high - wide.low) / (plain.high - plain.low)
    expected = np.sqrt(6 / 5) * sps.t.ppf(0.975, 5) / sps.norm.ppf(0.975)
    assert ratio == pytest.approx(expected, rel=0.1)


def test_seeded_and_deterministic():
    rng = np.random.default_rng(8)
    a, b = rng.normal(100, 4, 12), rng.normal(103, 4, 12)
    c1 = Bootstrap(seed=3).compare(a, b)
    c2 = Bootstrap(seed=3).compare(a, b)
    c3 = Bootstrap(seed=4).compare(a, b)
    assert (c1.low, c1.high, c1.p_value) == (c2.low, c2.high, c2.p_value)
    assert c1.low != c3.low and c1.low == pytest.approx(c3.low, abs=0.002)


def test_p_value_agrees_with_the_interval_at_every_level():
    rng = np.random.default_rng(9)
    for _ in range(30):
        a, b = rng.normal(100, 4, 10), rng.normal(100 + rng.normal(0, 4), 4, 10)
        for level in (0.8, 0.9, 0.95, 0.99):
            c = Bootstrap(resamples=4000).compare(a, b, level)
            assert c.significant == (c.p_value < 1 - level), (level, c)


def test_median_refused_below_its_minimum_with_an_actionable_warning():
    assert min_runs(parse_statistic("median")) == 8
    assert min_runs(parse_statistic("p90")) == 30
    assert min_runs(parse_statistic("mean")) == 5
    c = get_method("bootstrap", statistic="median").compare([1.0, 2, 3, 4, 5], [2.0, 3, 4, 5, 6])
    assert not c.defined
    (w,) = c.warnings
    assert w.code == "too_few_runs" and w.details["needed"] == 8 and "mannwhitney" in w.message
    assert c.estimate == pytest.approx(4 / 3 - 1)


def test_a_wild_run_widens_the_interval_and_says_so():
    rng = np.random.default_rng(10)
    a = rng.normal(100, 2, 12)
    b = rng.normal(101, 2, 12)
    b[3] = 160.0  # one wild run
    c = Bootstrap().compare(a, b)
    assert "interval_guarded" in [w.code for w in c.warnings]
    plain = bootstrap_batch(a, b, expand=False)
    assert c.high - c.low > plain.high[0] - plain.low[0]


def test_quantile_of_bimodal_runs_warns():
    rng = np.random.default_rng(12)
    a = np.concatenate([rng.normal(100, 1, 14), rng.normal(130, 1, 6)])
    b = np.concatenate([rng.normal(100, 1, 14), rng.normal(130, 1, 6)])
    c = Bootstrap("p75").compare(a, b)
    assert "quantile_in_gap" in [w.code for w in c.warnings]


def test_bootstrap_mean_resampling_is_a_real_bootstrap():
    """Resample means have the plug-in variance s²(n−1)/n² (not an artefact of shared counts)."""
    x = np.random.default_rng(13).normal(0, 1, (1, 15))
    m = _resampled_stats(x, parse_statistic("mean"), 200_000, np.random.default_rng(0))[0]
    assert m.mean() == pytest.approx(x.mean(), abs=0.01)
    assert m.var() == pytest.approx(x.var() / 15, rel=0.02)


def test_inputs_not_mutated_and_batch_rows_independent_of_batching():
    rng = np.random.default_rng(14)
    a, b = sim.pair("lognormal", rng, 3, 10, 0.05)
    a0, b0 = a.copy(), b.copy()
    res = bootstrap_batch(a, b, resamples=2000, seed=1)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    assert np.all(res.low <= res.estimate) and np.all(res.estimate <= res.high)


def test_bad_statistic_is_a_value_error():
    with pytest.raises(ValueError, match="unknown statistic"):
        get_method("bootstrap", statistic="p100")
    with pytest.raises(ValueError, match="resamples"):
        Bootstrap(resamples=10).compare([1.0, 2, 3, 4, 5], [1.0, 2, 3, 4, 5])
