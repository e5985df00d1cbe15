"""Result of comparing a candidate sample with a baseline sample, and its verdict."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from perflab.stats.warnings import StatWarning

#: What a Comparison's numbers are: see `Comparison`.
SCALES = ("ratio", "relative", "absolute")


class Verdict(str, enum.Enum):
    """What a comparison means for a metric whose better direction is known."""

    BETTER = "better"
    WORSE = "worse"
    NOT_SIGNIFICANT = "ns"  # the interval contains zero change
    WITHIN_NOISE = "within_noise"  # significant but not entirely beyond the practical threshold
    UNDEFINED = "undefined"  # not enough data to compute an interval


@dataclass(frozen=True)
class Comparison:
    """Change of a candidate against a baseline, defined once for every method.

    ``scale`` says what the numbers are (see `intervals.py`):

    - ``"ratio"`` (every run of both variants is positive): estimate/low/high are the ratio
      of the locations minus one, as fractions (0.143 means +14.3%), and the interval is
      built on the ratio: low > −1 always (nothing positive falls by 100% or more).
    - ``"relative"`` (some run ≤ 0, baseline location clearly away from zero): the
      difference of the locations over |baseline location|, as fractions, estimate and
      interval alike — a rise is positive whatever the sign of the values.
    - ``"absolute"`` (some run ≤ 0 and the baseline location is within its own noise of
      zero, its interval containing 0): the difference in the metric's own unit; a warning
      (``absolute_change``) says why, so that a report can footnote it.

    estimate:   point estimate of the change (see ``scale``); always low ≤ estimate ≤ high.
    low, high:  the ``confidence`` interval of the change; NaN when it cannot be computed
                (too few runs), with a warning saying why.
    p_value:    two-sided p-value in [0, 1] of "no change" by the test the interval inverts,
                so that ``significant`` ⇔ p_value ≤ 1 − (family) confidence; NaN if
                undefined. After a multiple-comparison correction it is the adjusted
                p-value (``correction`` names it) and ``p_raw`` keeps the unadjusted one.
    p_raw:      the unadjusted p-value, in [0, 1] (equal to p_value without a correction).
    correction: ``"none"`` or the correction that adjusted p_value and the interval.
    choice:     why the automatic method chose ``method`` for this comparison (a key of
                `perflab.stats.auto.REASONS`: ``clean``, ``outliers``, ``skew``,
                ``few_runs``); ``""`` when a method was asked for by name.
    method:     name of the method that produced it (e.g. ``"welch"``).
    confidence: level of [low, high], in (0, 1); after a correction, the widened level.
    statistic:  what is compared: ``"mean"``, ``"median"``, ``"p99"``, ``"hl-shift"``
                (Hodges–Lehmann shift over the baseline median), ``"hl-ratio"``…
    interval:   how [low, high] was built: ``"difference"`` (CI of the difference over the
                baseline location), ``"fieller"`` (CI of the ratio), ``"log-ratio"``,
                ``"bca"``, ``"exact"``…
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
    scale: str = "ratio"
    p_raw: float = math.nan
    correction: str = "none"
    choice: str = ""

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)}, not {self.scale!r}")
        if math.isnan(self.p_raw) and self.correction == "none":
            object.__setattr__(self, "p_raw", self.p_value)

    @property
    def relative(self) -> bool:
        """True when estimate/low/high are fractions (``ratio`` or ``relative`` scale)."""
        return self.scale != "absolute"

    @property
    def half_width(self) -> float:
        """Half the interval's width, in the unit of ``scale`` (0.01 = ±1%); NaN if undefined."""
        return (self.high - self.low) / 2 if self.defined else math.nan

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def significant(self) -> bool:
        """True when the interval excludes zero change."""
        return self.defined and (self.low > 0 or self.high < 0)

    def to_dict(self) -> dict[str, Any]:
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
            "scale": self.scale,
            "p_raw": self.p_raw,
            "correction": self.correction,
            "choice": self.choice,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def classify(c: Comparison, better: str, threshold: float = 0.0) -> Verdict:
    """Verdict for a metric where ``better`` is ``"higher"`` or ``"lower"``.

    threshold: practical-significance bound as a fraction (0.01 = 1%), ≥ 0. A change is
    declared (BETTER/WORSE) only when the whole interval lies beyond ±threshold. An
    interval containing zero is NOT_SIGNIFICANT; one that excludes zero but reaches
    inside ±threshold is WITHIN_NOISE: real, perhaps, but not shown to matter.
    On the ``absolute`` scale the threshold does not apply (the baseline is within noise of
    zero, so any real change is unboundedly large relative to it): a significant change is
    BETTER or WORSE.
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    if not (threshold >= 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite fraction ≥ 0, not {threshold!r}")
    if not c.defined:
        return Verdict.UNDEFINED
    if not c.significant:
        return Verdict.NOT_SIGNIFICANT
    if threshold > 0 and c.relative and not (c.low > threshold or c.high < -threshold):
        return Verdict.WITHIN_NOISE
    increased = c.low > 0
    return Verdict.BETTER if increased == (better == "higher") else Verdict.WORSE


_FIELDS = frozenset(Comparison.__dataclass_fields__)


def replace_comparison(c: Comparison, **changes: Any) -> Comparison:
    """``dataclasses.replace(c, **changes)``, the same result (``__post_init__`` included) at
    a fifth of the cost: corrections replace every comparison of a table, thousands of times
    for a large one."""
    unknown = changes.keys() - _FIELDS
    if unknown:
        raise TypeError(f"Comparison has no field {sorted(unknown)[0]!r}")
    new = object.__new__(Comparison)
    fields = new.__dict__
    fields.update(c.__dict__)
    fields.update(changes)
    new.__post_init__()
    return new
