"""Interval results for a batch of E comparisons at once, as numpy arrays.

Every method computes its intervals on 2-D arrays (E experiments × n runs) so that a
whole matrix of cells, or thousands of simulated experiments, costs one vectorised
call; `Comparison` objects are made from one row of such a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning


@dataclass(frozen=True)
class Intervals:
    """E intervals of the relative change of a candidate against a baseline.

    All arrays have shape (E,). estimate/low/high are fractions of the baseline location
    (0.05 = +5%); p_value in [0, 1]; NaN where undefined. baseline/candidate are the
    locations (mean, median…) in the metric's unit.
    """

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    baseline: np.ndarray
    candidate: np.ndarray

    @property
    def significant(self) -> np.ndarray:
        """Boolean (E,): the interval excludes zero (False where undefined)."""
        with np.errstate(invalid="ignore"):
            return (self.low > 0) | (self.high < 0)

    def covers(self, truth: float | np.ndarray) -> np.ndarray:
        """Boolean (E,): low ≤ truth ≤ high (False where undefined)."""
        with np.errstate(invalid="ignore"):
            return (self.low <= truth) & (truth <= self.high)

    def to_dict(self) -> dict:
        return {
            "estimate": self.estimate.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "p_value": self.p_value.tolist(),
            "baseline": self.baseline.tolist(),
            "candidate": self.candidate.tolist(),
        }

    def comparison(
        self,
        i: int,
        *,
        method: str,
        confidence: float,
        n_baseline: int,
        n_candidate: int,
        statistic: str,
        interval: str,
        warnings: tuple[StatWarning, ...] = (),
    ) -> Comparison:
        return Comparison(
            method=method,
            confidence=confidence,
            n_baseline=n_baseline,
            n_candidate=n_candidate,
            baseline_location=float(self.baseline[i]),
            candidate_location=float(self.candidate[i]),
            estimate=float(self.estimate[i]),
            low=float(self.low[i]),
            high=float(self.high[i]),
            p_value=float(self.p_value[i]),
            warnings=warnings,
            statistic=statistic,
            interval=interval,
        )


def as_batch(values, name: str = "sample") -> np.ndarray:
    """A float64 (E, n) copy of a 1-D or 2-D array of finite values (inputs never mutated)."""
    arr = np.array(values, dtype=np.float64, copy=True)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D or 2-D array of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_confidence(confidence: float) -> float:
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must lie in (0, 1), not {confidence!r}")
    return float(confidence)
