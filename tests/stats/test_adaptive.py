"""Adaptive repetitions: stop on precision, keep the error rate, save machine time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from perflab.stats import decide, relative_half_width
from perflab.stats.adaptive import BELOW_MIN, CONTINUE, MAX_REACHED, TARGET_REACHED
from perflab.stats.welch import welch_batch

from tests.stats import sim

MIN, MAX, TARGET = 5, 50, 0.01


def _paths(family: str, seed: int, e: int = 4000, cv: float = 0.02):
    """A/A experiments with MAX runs per variant available, cv run-to-run noise."""
    rng = np.random.default_rng(sim.seed_of("adaptive", family, seed))
    a = sim.MEAN * (1 + cv * (sim.draw(family, rng, (e, MAX)) / sim.MEAN - 1) / sim.CV)
    b = sim.MEAN * (1 + cv * (sim.draw(family, rng, (e, MAX)) / sim.MEAN - 1) / sim.CV)
    return a, b


def _adaptive(a, b):
    """Vectorised form of `decide` on one tracked comparison: (runs used, significant, hw by n)."""
    e = a.shape[0]
    used = np.full(e, MAX)
    sig = np.zeros(e, bool)
    done = np.zeros(e, bool)
    hws = {}
    for n in range(MIN, MAX + 1):
        r = welch_batch(a[:, :n], b[:, :n], interval="difference")  # as `decide` (its half-width)
        hw = (r.high - r.low) / 2
        hws[n] = hw
        stop = ~done & ((hw <= TARGET) | (n == MAX))
        used[stop] = n
        sig[stop] = r.significant[stop]
        done |= stop
    return used, sig, hws


def test_decide_follows_its_rules():
    rng = np.random.default_rng(1)
    quiet = (list(rng.normal(100, 0.5, 6)), list(rng.normal(100, 0.5, 6)))
    noisy = (list(rng.normal(100, 5, 6)), list(rng.normal(100, 5, 6)))
    d = decide({"a": quiet}, TARGET, 8, MAX)
    assert (d.stop, d.reason) == (False, BELOW_MIN)
    d = decide({"a": quiet}, TARGET, MIN, MAX)
    assert (d.stop, d.reason) == (True, TARGET_REACHED) and d.precisions[0].reached
    d = decide({("110%", "ops"): quiet, ("110%", "p99"): noisy}, TARGET, MIN, MAX)
    assert (d.stop, d.reason) == (False, CONTINUE)
    assert "('110%', 'p99')" in d.message and 6 < d.projected_runs <= MAX
    p = d.precisions[1]
    assert (
        p.runs_projected == math.ceil(6 * (p.half_width / TARGET) ** 2) or p.runs_projected >= MAX
    )
    d = decide({"x": noisy}, TARGET, MIN, 6)
    assert (d.stop, d.reason) == (True, MAX_REACHED) and "still wider" in d.message
    # one sample (no baseline): the interval of its mean
    d = decide({"solo": quiet[0]}, TARGET, MIN, MAX)
    assert d.stop and d.precisions[0].half_width == pytest.approx(relative_half_width(quiet[0]))
    assert d.to_dict()["precisions"][0]["key"] == "solo"
    with pytest.raises(ValueError, match="min"):
        decide({"a": quiet}, TARGET, 10, 5)
    with pytest.raises(ValueError, match="target"):
        decide({"a": quiet}, 0.0, MIN, MAX)


def test_decide_is_the_rule_that_was_simulated():
    a, b = _paths("normal", 2, e=60)
    used, _sig, _ = _adaptive(a, b)
    for i in range(60):
        for n in range(MIN, MAX + 1):
            d = decide({"m": (a[i, :n], b[i, :n])}, TARGET, MIN, MAX)
            if d.stop:
                break
        assert n == used[i]


@pytest.mark.parametrize("family", ["normal", "lognormal", "t3", "bimodal"])
def test_stopping_on_precision_keeps_the_false_positive_rate(family):
    """4,000 A/A experiments per family, 2% run noise, target ±1%, 5…50 runs."""
    a, b = _paths(family, 3)
    _used, sig, _ = _adaptive(a, b)
    assert sig.mean() <= 0.06
    fixed = welch_batch(a[:, :30], b[:, :30], interval="difference").significant.mean()
    # At most a small excess over a fixed count. Heavy tails (t3) show the largest: a fixed
    # count is conservative there (≈ 4%: outlying runs inflate s), while stopping favours
    # stretches without outliers, which brings the rate back to about the nominal 5–6%.
    assert sig.mean() - fixed <= 0.02


@pytest.mark.parametrize("family", ["normal", "lognormal", "bimodal"])
def test_machine_time_saved_against_a_fixed_count_of_the_same_precision(family):
    """The fixed count that reaches ±1% in 95% of experiments vs the adaptive runs used."""
    a, b = _paths(family, 4)
    used, _, hws = _adaptive(a, b)
    fixed = next(n for n in range(MIN, MAX + 1) if np.mean(hws[n] <= TARGET) >= 0.95)
    saved = 1 - used.mean() / fixed
    assert np.mean(used < MAX) > 0.95  # the target was reachable
    assert saved >= 0.15, (fixed, used.mean())


def test_stopping_on_significance_would_inflate_false_positives():
    """The contrast that shows why perflab stops on precision only."""
    a, b = _paths("normal", 5)
    hit = np.zeros(a.shape[0], bool)
    for n in range(MIN, MAX + 1):
        hit |= welch_batch(a[:, :n], b[:, :n], interval="difference").significant
    assert hit.mean() > 0.15
