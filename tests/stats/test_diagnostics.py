"""Diagnostics: each rule detects what it names, rarely fires on clean runs, says what to do."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import (
    diagnose_comparison,
    diagnose_sample,
    outlier_indices,
    runs_needed,
    welch_power,
)
from perflab.stats.diagnostics import (
    bimodality_warning,
    drift_warning,
    first_run_warning,
    outliers_warning,
    too_few_runs_warning,
    trend,
    unequal_variance_warning,
)
from perflab.stats.power import detectable_change


def test_outliers_are_flagged_by_index_and_kept():
    x = [10.0, 10.2, 9.9, 10.1, 10.0, 14.0, 10.05, 9.95, 3.0]
    assert outlier_indices(x) == (5, 8)
    assert outlier_indices(x, "iqr") == (5, 8)
    assert (
        outlier_indices([10.0, 10.2, 9.9, 10.1, 14.0]) == ()
    )  # fewer than 8 runs: MAD too unstable
    w = outliers_warning(x)
    assert w.details["indices"] == (5, 8) and "#6, #9" in w.message and "kept" in w.message
    assert w.to_dict()["details"]["indices"] == [5, 8]
    assert diagnose_sample(x, in_order=False).outliers == (5, 8)
    # with more than half the runs tied the MAD is 0: the mean absolute deviation steps in
    assert outlier_indices([0.487] * 9 + [0.495]) == (9,)


def test_outlier_rule_is_quiet_on_normal_runs():
    rng = np.random.default_rng(1)
    for n, rate in ((10, 0.05), (30, 0.025)):
        flagged = np.mean([bool(outlier_indices(rng.normal(100, 2, n))) for _ in range(2000)])
        assert flagged < rate
        flagged = np.mean(
            [bool(outlier_indices(rng.normal(100, 2, n), "iqr")) for _ in range(2000)]
        )
        assert flagged < 0.05


def test_drift_detected_and_rare_on_independent_runs():
    rng = np.random.default_rng(2)
    x = 100 * (1 + 0.004 * np.arange(20)) * (1 + 0.005 * rng.standard_normal(20))
    w = drift_warning(x)
    assert w is not None and w.code == "drift" and 0.05 < w.details["drift"] < 0.10
    assert "interleaved" in w.message and "paired" in w.message
    assert trend(x).slope == pytest.approx(0.4, rel=0.25)
    alarms = np.mean([drift_warning(rng.normal(100, 2, 20)) is not None for _ in range(1000)])
    assert alarms <= 0.02


def test_bimodality_detected_and_rare_on_unimodal_runs():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(100, 1, 20), rng.normal(115, 1, 10)])
    w = bimodality_warning(rng.permutation(x))
    assert w is not None and w.details["low_group"] == 20 and w.details["high_group"] == 10
    assert w.details["low_mean"] == pytest.approx(100, abs=1) and w.details[
        "high_mean"
    ] == pytest.approx(115, abs=1)
    for draw in (
        lambda: rng.normal(100, 5, 30),
        lambda: rng.lognormal(0, 0.3, 30),
        lambda: rng.standard_t(3, 30),
    ):
        alarms = np.mean([bimodality_warning(draw()) is not None for _ in range(500)])
        assert alarms <= 0.03
    assert bimodality_warning(x[:9]) is None  # too few runs to tell


def test_slow_first_run():
    times = [130.0, 100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    w = first_run_warning(times, "lower")
    assert (
        w is not None
        and w.details["relative"] == pytest.approx(0.3, abs=0.01)
        and "warmup" in w.message
    )
    assert (
        first_run_warning(times, "higher") is None
    )  # higher is better: a high first run is not slow
    assert first_run_warning([70.0, 100.0, 101.0, 99.0, 100.5], "higher") is not None
    assert first_run_warning([100.4, 100.0, 101.0, 99.0, 100.5], "lower") is None


def test_unequal_variances():
    rng = np.random.default_rng(4)
    a, b = rng.normal(100, 1, 12), rng.normal(100, 6, 12)
    w = unequal_variance_warning(a, b)
    assert w is not None and w.details["ratio"] > 3 and "candidate" in w.message
    assert unequal_variance_warning(a, rng.normal(100, 1.2, 12)) is None


def test_power_formula_agrees_with_simulation():
    """welch_power for n = 10, 2% noise, 3% change vs 4,000 simulated t-tests."""
    from scipy import stats as sps

    rng = np.random.default_rng(5)
    a = rng.normal(100, 2, (4000, 10))
    b = rng.normal(103, 2 * 1.03, (4000, 10))
    simulated = np.mean(sps.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05)
    assert float(welch_power(10, 0.02, 0.0206, 0.03)) == pytest.approx(simulated, abs=0.02)


def test_runs_needed_and_detectable_change_are_consistent():
    rng = np.random.default_rng(6)
    a, b = rng.normal(100, 3, 10), rng.normal(100, 3, 10)
    need = runs_needed(a, b, 0.01)
    cva, cvb = a.std(ddof=1) / a.mean(), b.std(ddof=1) / a.mean()
    assert welch_power(need, cva, cvb, 0.01) >= 0.8 > welch_power(need - 1, cva, cvb, 0.01)
    mde = detectable_change(a, b, runs=need)
    assert mde <= 0.01 < detectable_change(a, b, runs=need - 1)
    assert 50 < need < 300  # ≈ 2·(1.96 + 0.84)²·(cv/1%)² ≈ 140 for cv = 3%


def test_too_few_runs_says_how_many_are_needed():
    rng = np.random.default_rng(7)
    a, b = rng.normal(100, 3, 10), rng.normal(100.5, 3, 10)
    w = too_few_runs_warning(a, b, resolve=0.01)
    assert (
        w is not None and w.details["needed"] > 50 and f"≥ {w.details['needed']} runs" in w.message
    )
    assert too_few_runs_warning(a, b, resolve=0.10) is None  # 10 runs resolve 10% easily
    (w2,) = diagnose_comparison(a, b, resolve=0.01)
    assert w2.code == "too_few_runs"


def test_diagnose_sample_runs_everything_and_serialises():
    x = [130.0, 100, 101, 99, 100.5, 99.5, 100.2, 100.1, 99.8, 100.3]
    d = diagnose_sample(x, better="lower")
    codes = [w.code for w in d.warnings]
    assert "slow_first_run" in codes and "outliers" in codes and d.outliers == (0,)
    assert d.to_dict()["outliers"] == [0]
    assert diagnose_sample(x, in_order=False).trend is None
