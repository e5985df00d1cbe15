"""Adaptive repetitions: after each block, stop once every interval is as narrow as asked.

``repetitions = { min = 5, max = 50, target_ci = "1%" }``: the runner calls `decide`
after each completed block with the runs so far of every compared (cell, metric); it
stops when each relative interval's half-width is ≤ the target (or at ``max``).

Stopping on *precision*, never on significance, is what keeps the error rates: the
half-width depends on the runs' spread, not on the difference between the variants,
so the decision to stop carries (almost) no information about the sign or size of the
change. Simulated A/A experiments confirm the false-positive rate stays at the nominal
rate (tests/stats/test_adaptive.py). Stopping on a p-value ("run until significant")
would inflate it without bound.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import Values
from perflab.stats.intervals import check_confidence
from perflab.stats.summary import as_sample

if TYPE_CHECKING:  # (typing.TypeIs is Python ≥ 3.13)
    from typing_extensions import TypeIs

#: Why the runner should stop or go on.
BELOW_MIN = "below_min"
TARGET_REACHED = "target_reached"
MAX_REACHED = "max_reached"
CONTINUE = "continue"


@dataclass(frozen=True)
class Precision:
    """Precision of one tracked (cell, metric) after the runs so far.

    runs:           runs per variant (the fewer of the two, for a comparison).
    half_width:     half-width of its relative interval (fraction; 0.01 = ±1%); NaN with < 2 runs.
    reached:        half_width ≤ target.
    runs_projected: runs per variant at which the observed noise would reach the target
                    (half-width ∝ 1/√n), ≥ runs; None while undefined.
    """

    key: Hashable
    runs: int
    half_width: float
    reached: bool
    runs_projected: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key if isinstance(self.key, (str, int, float)) else str(self.key),
            "runs": self.runs,
            "half_width": self.half_width,
            "reached": self.reached,
            "runs_projected": self.runs_projected,
        }


@dataclass(frozen=True)
class Decision:
    """What the runner does next. ``stop`` is the decision; ``reason`` one of
    `BELOW_MIN`, `TARGET_REACHED`, `MAX_REACHED`, `CONTINUE`; ``message`` says why in a
    sentence; ``projected_runs`` estimates the runs per variant the slowest (cell, metric)
    needs (capped at max), for the ETA."""

    stop: bool
    reason: str
    message: str
    runs: int
    projected_runs: int
    target: float
    precisions: tuple[Precision, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "stop": self.stop,
            "reason": self.reason,
            "message": self.message,
            "runs": self.runs,
            "projected_runs": self.projected_runs,
            "target": self.target,
            "precisions": [p.to_dict() for p in self.precisions],
        }


def relative_half_width(
    baseline: Values, candidate: Values | None = None, confidence: float = 0.95
) -> float:
    """Half-width of the Welch interval of the relative change (fraction of the baseline mean);
    with one sample, of the t interval of its mean relative to the mean. NaN below 2 runs."""
    a = as_sample(baseline)
    b = as_sample(candidate) if candidate is not None else None
    # relative widths are scale-free: compute them on rescaled runs (1e-300…1e300)
    top = max(float(np.max(np.abs(x))) for x in ((a, b) if b is not None else (a,)))
    k = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 else 1.0
    a = a / k
    m = abs(float(a.mean()))
    if m == 0:
        raise ValueError("mean is zero: a relative precision is undefined")
    q = 0.5 + confidence / 2
    if b is None:
        if a.size < 2:
            return math.nan
        return float(special.stdtrit(a.size - 1, q)) * float(a.std(ddof=1)) / math.sqrt(a.size) / m
    b = b / k
    if a.size < 2 or b.size < 2:
        return math.nan
    va = float(a.var(ddof=1)) / a.size
    vb = float(b.var(ddof=1)) / b.size
    if va + vb == 0:
        return 0.0
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(special.stdtrit(df, q)) * math.sqrt(va + vb) / m


def _is_pair(value: tuple[Values, Values] | Values) -> TypeIs[tuple[Values, Values]]:
    """``value`` is a (baseline_runs, candidate_runs) pair, not the runs of one sample."""
    return isinstance(value, tuple) and len(value) == 2 and np.ndim(value[0]) == 1


def decide(
    samples: Mapping[Hashable, tuple[Values, Values] | Values],
    target: float,
    min_runs: int,
    max_runs: int,
    confidence: float = 0.95,
) -> Decision:
    """Continue or stop after a block.

    samples: per tracked key (e.g. ``(cell, metric, variant)``), either a
             ``(baseline_runs, candidate_runs)`` pair — the comparison's interval — or
             one sequence of runs — the interval of its mean (no baseline to compare).
    target:  largest acceptable half-width, a fraction (0.01 for ``target_ci = "1%"``).
    min_runs, max_runs: bounds on runs per variant (2 ≤ min ≤ max).
    """
    confidence = check_confidence(confidence)
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"target must be a positive fraction, not {target!r}")
    if not 2 <= min_runs <= max_runs:
        raise ValueError(f"need 2 ≤ min ({min_runs}) ≤ max ({max_runs})")
    if not samples:
        raise ValueError("nothing to track: give at least one sample")
    precisions = tuple(_precision(k, v, target, confidence) for k, v in samples.items())
    runs = min(p.runs for p in precisions)
    projected = min(
        max_runs,
        max((p.runs_projected if p.runs_projected is not None else max_runs) for p in precisions),
    )
    projected = max(projected, min(runs, max_runs), min_runs)
    short = [p for p in precisions if not p.reached]
    short.sort(key=lambda p: -(p.half_width if not math.isnan(p.half_width) else math.inf))
    widest = _widest(short)
    if runs < min_runs:
        stop, reason = False, BELOW_MIN
        message = f"{runs} of at least {min_runs} runs done"
    elif not short:
        stop, reason = True, TARGET_REACHED
        message = f"every interval is within ±{target:.2%} after {runs} runs"
    elif runs >= max_runs:
        stop, reason = True, MAX_REACHED
        message = (
            f"maximum of {max_runs} runs reached; {len(short)} of {len(precisions)} "
            f"intervals are still wider than ±{target:.2%} ({widest})"
        )
    else:
        stop, reason = False, CONTINUE
        message = (
            f"{len(short)} of {len(precisions)} intervals wider than ±{target:.2%} "
            f"({widest}); about {projected} runs needed"
        )
    # Once stopping, the runs needed are the runs done.
    return Decision(stop, reason, message, runs, runs if stop else projected, target, precisions)


def _precision(
    key: Hashable, value: tuple[Values, Values] | Values, target: float, confidence: float
) -> Precision:
    """The precision of one tracked key's runs so far (see `decide`)."""
    if _is_pair(value):
        a, b = value
        n = min(len(a), len(b))
        hw = relative_half_width(a, b, confidence)
    else:
        n = len(value)
        hw = relative_half_width(value, None, confidence)
    if math.isnan(hw):
        proj = None
    else:
        proj = max(n, math.ceil(n * (hw / target) ** 2))
    return Precision(key, n, hw, bool(hw <= target), proj)


def _widest(short: list[Precision]) -> str:
    """The first three of ``short`` (widest first) with their half-widths, for a message."""
    return ", ".join(
        f"{p.key}: ±{p.half_width:.2%}" if not math.isnan(p.half_width) else f"{p.key}: undefined"
        for p in short[:3]
    ) + (f" and {len(short) - 3} more" if len(short) > 3 else "")
