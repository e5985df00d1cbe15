"""Result of comparing a candidate sample with a baseline sample, and its verdict."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from perflab.stats.warnings import StatWarning


class Verdict(str, enum.Enum):
    """What a comparison means for a metric whose better direction is known."""

    BETTER = "better"
    WORSE = "worse"
    NOT_SIGNIFICANT = "ns"  # the interval contains zero change
    WITHIN_NOISE = "within_noise"  # significant but not entirely beyond the practical threshold
    UNDEFINED = "undefined"  # not enough data to compute an interval


@dataclass(frozen=True)
class Comparison:
    """Change of a candidate against a baseline, relative to the baseline.

    All relative quantities are fractions (0.143 means +14.3%) of the baseline's
    location statistic (the mean, for Welch).

    estimate:   point estimate of the relative change (candidate/baseline − 1).
    low, high:  the ``confidence`` interval of the relative change; low ≤ estimate ≤ high.
                NaN when it cannot be computed (fewer than 2 runs on a side).
    p_value:    two-sided p-value of "no change" for the method's test, in [0, 1]; NaN if
                undefined. After a multiple-comparison correction it is the adjusted p-value.
    method:     name of the method that produced it (e.g. ``"welch"``).
    confidence: level of [low, high], in (0, 1); after a correction, the widened level.
    statistic:  what is compared: ``"mean"``, ``"median"``, ``"p99"``, ``"hl-shift"``
                (Hodges–Lehmann shift over the baseline median), ``"hl-ratio"``…
    interval:   how [low, high] was built: ``"difference"`` (CI of the difference over the
                baseline location), ``"fieller"`` (CI of the ratio), ``"bca"``, ``"exact"``…
    """

    method: str
    confidence: float
    n_baseline: int
    n_candidate: int
    baseline_location: float
    candidate_location: float
    estimate: float
    low: float
    high: float
    p_value: float
    warnings: tuple[StatWarning, ...] = field(default=())
    statistic: str = "mean"
    interval: str = "difference"

    @property
    def half_width(self) -> float:
        """Half the interval's width, as a fraction of the baseline (0.01 = ±1%); NaN if undefined."""
        return (self.high - self.low) / 2 if self.defined else math.nan

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def significant(self) -> bool:
        """True when the interval excludes zero change."""
        return self.defined and (self.low > 0 or self.high < 0)

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "confidence": self.confidence,
            "n_baseline": self.n_baseline,
            "n_candidate": self.n_candidate,
            "baseline_location": self.baseline_location,
            "candidate_location": self.candidate_location,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "significant": self.significant,
            "statistic": self.statistic,
            "interval": self.interval,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def classify(c: Comparison, better: str, threshold: float = 0.0) -> Verdict:
    """Verdict for a metric where ``better`` is ``"higher"`` or ``"lower"``.

    threshold: practical-significance bound as a fraction (0.01 = 1%), ≥ 0. A change is
    declared (BETTER/WORSE) only when the whole interval lies beyond ±threshold. An
    interval containing zero is NOT_SIGNIFICANT; one that excludes zero but reaches
    inside ±threshold is WITHIN_NOISE: real, perhaps, but not shown to matter.
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    if not (threshold >= 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite fraction ≥ 0, not {threshold!r}")
    if not c.defined:
        return Verdict.UNDEFINED
    if not c.significant:
        return Verdict.NOT_SIGNIFICANT
    if threshold > 0 and not (c.low > threshold or c.high < -threshold):
        return Verdict.WITHIN_NOISE
    increased = c.low > 0
    return Verdict.BETTER if increased == (better == "higher") else Verdict.WORSE
