"""The spread of a fleet's devices and the board apart (`perflab.stats.device_offsets`):
offsets against a least-squares fit, the warning's wording, and how often the rule names a
board, by simulation: equal boards (A/A), boards ±5% apart, one board 6% off.

`.venv/bin/python -m tests.stats.test_fleet_validation` prints these rates for the docs."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from perflab.stats import device_spread
from perflab.stats.device_offsets import MIN_OFFSET, apart
from perflab.stats.fixed_effects import fit_additive, make_layout
from scipy import stats as sps

from tests.stats import sim, sim_fleet

#: Experiments per configuration of the quick rates.
COUNT = 1000


def named_rate(
    family: str, boards: int, n: int, boards_are: str, count: int = COUNT, variants: int = 2
) -> float:
    """Share of A/A experiments (``variants`` variants, n runs each, balanced blocks) in
    which the rule names a board — for ``odd``, in which it names router-1, 6% slower than
    its equal siblings. ``boards_are``: ``equal``, ``spread`` (±5%) or ``odd``."""
    rng = np.random.default_rng(sim.seed_of("odd", family, boards, n, boards_are, count, variants))
    hits = 0
    for start in range(0, count, sim_fleet.CHUNK):
        e = min(sim_fleet.CHUNK, count - start)
        dev, _ = sim_fleet.layout("balanced", boards, n, rng)
        idx = np.array([int(d.split("-")[1]) - 1 for d in dev])
        if boards_are == "spread":
            factor = 1 + rng.uniform(-sim_fleet.SPREAD, sim_fleet.SPREAD, (e, boards))
        else:
            factor = np.ones((e, boards))
            factor[:, 0] = 1.06 if boards_are == "odd" else 1.0
        runs = [sim.draw(family, rng, (e, n)) * factor[:, idx] for _ in range(variants)]
        layout = make_layout([dev] * variants)
        fit = fit_additive(np.log(np.concatenate(runs, axis=1)), layout)
        flags = apart(fit, layout, 0.95, MIN_OFFSET, True).flags
        first = layout.devices.index("router-1")
        hits += int((flags[:, first] if boards_are == "odd" else flags.any(axis=1)).sum())
    return hits / count


@pytest.mark.parametrize("family", ["normal", "t3", "contaminated"])
@pytest.mark.parametrize("boards", [2, 4])
def test_equal_boards_are_rarely_named(family, boards):
    """A/A, equal boards, 2 variants of 10 runs: about 1% of experiments (≤ 2%)."""
    assert named_rate(family, boards, 10, "equal") <= 0.02


def test_a_board_six_percent_off_is_named_with_enough_runs():
    """4 boards, 5% noise: found about half the time at 30 runs per variant."""
    assert named_rate("normal", 4, 30, "odd") >= 0.4
    assert named_rate("normal", 4, 100, "odd") >= 0.9


def _runs(rng, boards, per_board, factors, change=0.03, noise=0.02):
    dev = [b for b in boards for _ in range(per_board)]
    f = np.array([factors.get(d, 1.0) for d in dev])
    a = 100 * f * np.exp(noise * rng.standard_normal(f.size))
    b = 100 * (1 + change) * f * np.exp(noise * rng.standard_normal(f.size))
    return a, b, dev


def test_offsets_are_the_least_squares_fit_and_the_odd_board_is_named():
    rng = np.random.default_rng(1)
    boards = ["router-1", "router-2", "router-3", "router-4"]
    a, b, dev = _runs(rng, boards, 6, {"router-3": 1.06})
    s = device_spread([a, b], [dev, dev], better="lower")
    y = np.log(np.concatenate([a, b]))
    x = np.array([[d == k for k in boards] + [i >= a.size] for i, d in enumerate(dev + dev)])
    coef, rss, *_ = np.linalg.lstsq(x.astype(float), y, rcond=None)
    alpha = coef[:4]
    for o, want in zip(s.offsets, alpha - alpha.mean()):
        assert o.offset == pytest.approx(math.expm1(want), rel=1e-9)
        assert o.low < o.offset < o.high and o.runs == 12
    assert s.scale == "ratio" and s.df == y.size - 5
    rss_variants = sum(((v - v.mean()) ** 2).sum() for v in (y[: a.size], y[a.size :]))
    f = (rss_variants - rss[0]) / 3 / (rss[0] / s.df)
    assert s.p_value == pytest.approx(sps.f.sf(f, 3, s.df), rel=1e-6)
    (w,) = s.warnings
    assert w.code == "odd_device" and w.details["device"] == "router-3"
    assert re.match(r"router-3 runs \d\.\d% slower than the other 3 in every variant: ", w.message)
    assert "check that board" in w.message
    assert 0.04 < w.details["offset"] < 0.08


def test_wording_follows_the_better_direction_and_two_boards_are_named_once():
    rng = np.random.default_rng(2)
    a, b, dev = _runs(rng, ["r1", "r2"], 10, {"r1": 0.92})
    said = {
        "higher": r"r1 runs 8\.\d% slower than r2 in every variant",  # ops/s: r1 is lower
        "lower": r"r2 runs 9\.\d% slower than r1 in every variant",  # times: r2 is higher
        None: r"r1's runs are 8\.\d% lower than r2's in every variant",
    }
    for better, pattern in said.items():
        (w,) = device_spread([a, b], [dev, dev], better=better).warnings
        assert re.match(pattern, w.message), w.message


def test_what_is_not_named():
    rng = np.random.default_rng(3)
    boards = ["a", "b", "c"]
    # one variant only: "in every variant" needs two
    a, b, dev = _runs(rng, boards, 8, {"a": 1.1})
    assert device_spread([a], [dev]).warnings == ()
    # a real but small difference (1%), resolved by many runs: below the 2% guard
    a, b, dev = _runs(rng, boards, 200, {"a": 1.01}, noise=0.005)
    s = device_spread([a, b], [dev, dev])
    assert s.p_value < 1e-6 and s.warnings == ()
    assert device_spread([a, b], [dev, dev], min_offset=0.005).warnings[0].details["device"] == "a"
    # the siblings of an odd board are not named the other way
    a, b, dev = _runs(rng, ["a", "b", "c", "d", "e"], 20, {"c": 1.1}, noise=0.01)
    assert [w.details["device"] for w in device_spread([a, b], [dev, dev]).warnings] == ["c"]


def test_one_device_values_around_zero_and_bad_input():
    one = device_spread([[1.0, 2.0, 3.0], [2.0, 3.0]], [["x"] * 3, ["x"] * 2])
    assert [o.offset for o in one.offsets] == [0.0] and math.isnan(one.offsets[0].low)
    assert math.isnan(one.p_value) and one.spread == 0.0
    rng = np.random.default_rng(4)
    z = rng.normal(0, 1, 40)
    dev = ["a", "b"] * 10
    s = device_spread([z[:20], z[20:] + 1], [dev, dev])
    assert s.scale == "absolute" and s.to_dict()["scale"] == "absolute"
    with pytest.raises(ValueError, match="one device per run"):
        device_spread([[1.0, 2.0]], [["a"]])
    with pytest.raises(ValueError, match="confidence"):
        device_spread([[1.0, 2.0]], [["a", "b"]], confidence=1.5)
