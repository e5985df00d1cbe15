"""The automatic default: Welch on clean runs, Mann–Whitney on outlying or skewed ones.

Power is simulated on the data that made Welch blind (one run in ten throttled, heavy
right skew) and on clean runs, against Mann–Whitney — benchstat's test, and the same
verdicts as benchstat on the same data (benchmarks/verdicts_vs_benchstat) — and Welch.
Tolerances: 3 binomial standard errors of 2,000 experiments. A/A rates, coverage and the
agreement rule of ``auto`` are in test_validation.py and test_agreement.py with every
other method.
"""

from __future__ import annotations

import math

import numpy as np
import perflab.stats as st
import pytest
from perflab.stats.auto import auto_batch, choose, choose_batch
from perflab.stats.mannwhitney import mannwhitney_batch
from perflab.stats.welch import welch_batch

from tests.stats import sim

E = 2000


def _se(p: float) -> float:
    return math.sqrt(max(p * (1 - p), 0.05 * 0.95) / E)


def _power(family: str, n: int, change: float) -> dict[str, float]:
    rng = np.random.default_rng(sim.seed_of("auto-power", family, n, change))
    a = sim.draw(family, rng, (E, n))
    b = sim.draw(family, rng, (E, n)) * (1 + change)
    return {
        "auto": float(auto_batch(a, b).significant.mean()),
        "mannwhitney": float(mannwhitney_batch(a, b, 0.95).significant.mean()),
        "welch": float(welch_batch(a, b, 0.95).significant.mean()),
        "rank_share": float(choose_batch(a, b).mean()),
    }


@pytest.mark.parametrize("n", [5, 10, 30])
def test_one_throttled_run_in_ten_does_not_blind_the_default(n):
    p = _power("contaminated", n, 0.03)
    assert p["auto"] >= p["mannwhitney"] - 3 * _se(p["mannwhitney"]), p
    # The old default (Welch) found such a change about 1 time in 10 at n = 10.
    if n >= 10:
        assert p["auto"] >= 3 * p["welch"], p


@pytest.mark.parametrize("n", [5, 10, 30])
def test_heavy_skew_gets_the_rank_test(n):
    p = _power("skewed", n, 0.25)
    assert p["rank_share"] > (0.5 if n == 5 else 0.8), p
    assert p["auto"] >= p["mannwhitney"] - 3 * _se(p["mannwhitney"]), p
    assert p["auto"] > p["welch"], p


@pytest.mark.parametrize("family", ["normal", "integer"])
@pytest.mark.parametrize("n", [5, 10, 30])
def test_clean_runs_keep_welchs_power(family, n):
    # Poisson(20) counts: a +3% change is below their resolution, +10% is not.
    p = _power(family, n, 0.1 if family == "integer" else 0.03)
    assert p["auto"] >= p["welch"] - 3 * _se(p["welch"]), p
    assert p["rank_share"] < 0.35, p  # mostly Welch


@pytest.mark.parametrize("family", ["lognormal", "t3", "bimodal"])
@pytest.mark.parametrize("n", [5, 10, 30])
def test_in_between_runs_get_the_better_of_both(family, n):
    """Moderate skew, heavy tails, two modes: at least as powerful as either test alone."""
    p = _power(family, n, 0.03)
    best = max(p["welch"], p["mannwhitney"])
    assert p["auto"] >= best - 3 * _se(best), p


def test_choice_and_reason():
    rng = np.random.default_rng(5)
    clean = 100 + rng.standard_normal(10)
    throttled = clean.copy()
    throttled[3] = 200
    assert choose(clean, clean[::-1] + 3) == st.Choice("welch", "clean")
    assert choose(throttled, clean + 3) == st.Choice("mannwhitney", "outliers")
    assert choose(clean[:3], clean[3:6]) == st.Choice("welch", "few_runs")
    skewed = np.exp(rng.standard_normal(30))
    assert choose(skewed, skewed[::-1]).method == "mannwhitney"
    # A location change between the variants is not an outlier: residuals are per variant.
    assert choose(clean, clean + 50).reason == "clean"
    # Scale-free: the same runs at 1e-300 and 1e300 decide alike.
    for k in (1e-300, 1e300):
        assert choose(throttled * k, (clean + 3) * k) == choose(throttled, clean + 3)
        assert choose(clean * k, clean[::-1] * k) == choose(clean, clean[::-1])


def test_compare_says_which_method_ran_and_why():
    rng = np.random.default_rng(6)
    a = 100 + rng.standard_normal(10)
    b = a[::-1] * 1.05
    a[2] = 200
    c = st.get_method().compare(a, b)
    assert (c.method, c.choice) == ("mannwhitney", "outliers")
    assert c.to_dict()["choice"] == "outliers" and c.significant
    c = st.get_method("welch").compare(a, b)
    assert (c.method, c.choice) == ("welch", "")


def test_mglru_runs_are_clean_so_the_published_intervals_stand(mglru):
    """The MGLRU report's TLDR was made with t intervals; its runs are clean, so the
    default reproduces it (test_compare_mglru.py checks the numbers)."""
    for ram in ("90", "110"):
        for metric in ("ops_per_sec", "p99_latency_ms"):
            got = choose(mglru("baseline", ram, metric), mglru("mglru", ram, metric))
            assert got.method == "welch", (ram, metric, got)
