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
