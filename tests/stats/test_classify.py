"""Verdicts: direction-aware, with a practical threshold and "within noise"."""

from __future__ import annotations

import math

import pytest
from perflab.stats import Comparison, Verdict, classify


def comp(low: float, high: float) -> Comparison:
    est = (low + high) / 2 if not math.isnan(low) else 0.0
    return Comparison("welch", 0.95, 10, 10, 100.0, 100 * (1 + est), est, low, high, 0.01)


@pytest.mark.parametrize(
    "low,high,better,threshold,verdict",
    [
        (0.02, 0.05, "higher", 0.0, Verdict.BETTER),
        (0.02, 0.05, "lower", 0.0, Verdict.WORSE),
        (-0.05, -0.02, "lower", 0.0, Verdict.BETTER),
        (-0.05, -0.02, "higher", 0.0, Verdict.WORSE),
        (-0.01, 0.03, "higher", 0.0, Verdict.NOT_SIGNIFICANT),
        (0.0, 0.03, "higher", 0.0, Verdict.NOT_SIGNIFICANT),  # touching zero is not a change
        # threshold 1%: the whole interval must lie beyond ±1%
        (0.02, 0.05, "higher", 0.01, Verdict.BETTER),
        (0.005, 0.05, "higher", 0.01, Verdict.WITHIN_NOISE),  # real, not shown to matter
        (0.002, 0.008, "higher", 0.01, Verdict.WITHIN_NOISE),  # real and shown not to matter
        (-0.05, -0.011, "lower", 0.01, Verdict.BETTER),
        (-0.05, -0.005, "lower", 0.01, Verdict.WITHIN_NOISE),
        (-0.02, 0.03, "lower", 0.01, Verdict.NOT_SIGNIFICANT),  # NS takes precedence
        (0.01, 0.05, "higher", 0.01, Verdict.WITHIN_NOISE),  # exactly at the threshold: not beyond
        (math.nan, math.nan, "higher", 0.0, Verdict.UNDEFINED),
    ],
)
def test_verdicts(low, high, better, threshold, verdict):
    assert classify(comp(low, high), better, threshold) is verdict


def test_bad_arguments():
    with pytest.raises(ValueError, match="better"):
        classify(comp(0.1, 0.2), "faster")
    with pytest.raises(ValueError, match="threshold"):
        classify(comp(0.1, 0.2), "higher", -0.01)
    with pytest.raises(ValueError, match="threshold"):
        classify(comp(0.1, 0.2), "higher", math.nan)


def test_comparison_serialises_with_its_decision():
    d = comp(0.02, 0.05).to_dict()
    assert d["significant"] is True and d["statistic"] == "mean" and d["interval"] == "difference"
    assert comp(0.02, 0.05).half_width == pytest.approx(0.015)


def test_absolute_changes_ignore_a_relative_threshold():
    """A baseline within noise of zero: the change is in the unit, and any real change is
    unboundedly large relative to it, so the threshold (a fraction) does not apply."""
    c = Comparison("welch", 0.95, 10, 10, 0.0, 3.0, 3.0, 1.5, 4.5, 0.001, scale="absolute")
    assert not c.relative and classify(c, "higher", threshold=0.5) is Verdict.BETTER
    assert classify(c, "lower", threshold=0.5) is Verdict.WORSE


def test_comparison_fields_for_the_scale_and_the_correction():
    c = comp(0.02, 0.05)
    assert (c.scale, c.p_raw, c.correction) == ("ratio", 0.01, "none")
    d = c.to_dict()
    assert (d["scale"], d["p_raw"], d["correction"]) == ("ratio", 0.01, "none")
    with pytest.raises(ValueError, match="scale"):
        Comparison("welch", 0.95, 10, 10, 1.0, 1.0, 0.0, -0.1, 0.1, 0.5, scale="percent")
