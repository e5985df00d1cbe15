"""Interval results for a batch of E comparisons at once, as numpy arrays, and the rules
every method shares: one definition of the relative change, one rule of agreement.

Every method computes its intervals on 2-D arrays (E experiments × n runs) so that a
whole matrix of cells, or thousands of simulated experiments, costs one vectorised
call; `Comparison` objects are made from one row of such a batch.

**One definition of the relative change** (the ``scale`` of a row), for every method:

- ``ratio``: every run of both variants is positive. The change is the ratio of the
  locations minus one, and its interval is built on the ratio (Fieller's, the log ratio,
  the bootstrap of the ratio, the Hodges–Lehmann ratio): no bound is ever below −100%.
- ``relative``: some run is zero or negative, and the baseline location is clearly away
  from zero (its own interval excludes 0). Estimate and interval are the difference of
  the locations over |baseline location|, so that a rise is positive whatever the sign.
- ``absolute``: some run is zero or negative and the baseline location is within its own
  noise of zero (its interval contains 0): a relative change would be meaningless, so
  estimate and interval are the difference in the metric's own unit.

**One rule of agreement**: a row is significant ⇔ its interval excludes 0 ⇔ its p-value
≤ α = 1 − confidence. Every method builds its p-value as the inversion of the same test
that builds its interval, at *every* level (so that a multiple-comparison correction,
which recomputes intervals at other levels, cannot split them), and `reconcile` settles
the last floating-point hair at the boundary, marking the row if it had to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from perflab.stats.arrays import BoolArray, FloatArray, ObjectArray
from perflab.stats.records import made
from perflab.stats.types import Comparison
from perflab.stats.warnings import Detail, StatWarning

#: The scales of a relative change (see the module docstring).
RATIO, RELATIVE, ABSOLUTE = "ratio", "relative", "absolute"


def _strings(x: ArrayLike | None, e: int, default: str) -> ObjectArray:
    if x is None:
        return np.full(e, default, dtype=object)
    arr = np.asarray(x, dtype=object)
    return np.broadcast_to(arr, (e,)).copy() if arr.ndim == 0 else arr.copy()


@dataclass(frozen=True, init=False)
class Intervals:
    """E intervals of the change of a candidate against a baseline.

    All arrays have shape (E,).

    estimate/low/high: the change and its interval. Fractions (0.05 = +5%) where
                       ``scale`` is ``ratio`` or ``relative``; the metric's unit where it
                       is ``absolute``. low ≤ estimate ≤ high; NaN where undefined.
                       For ``ratio`` rows low > −1 (a ratio of positive runs).
    p_value:           two-sided p-value in [0, 1] of "no change" by the test the
                       interval inverts: p ≤ 1 − confidence ⇔ the interval excludes 0.
    baseline/candidate: the locations (mean, median…) in the metric's unit.
    scale:             ``ratio`` | ``relative`` | ``absolute`` per row (object array).
    kind:              how the interval was built per row (``difference``, ``fieller``,
                       ``log-ratio``, ``bca``, ``exact``, ``normal-approx``…).
    note:              per row, comma-separated codes of what happened on the way
                       (``""`` when nothing did): e.g. ``below_minus_100`` (the requested
                       interval would reach below −100% and was replaced),
                       ``coverage_short``, ``upper_unbounded``, ``reconciled``.

    ``scale``, ``kind`` and ``note`` may be given as None (every row ``ratio``, ``""``,
    ``""``) or as one string for every row; they are stored as (E,) object arrays.
    """

    estimate: FloatArray
    low: FloatArray
    high: FloatArray
    p_value: FloatArray
    baseline: FloatArray
    candidate: FloatArray
    scale: ObjectArray
    kind: ObjectArray
    note: ObjectArray

    def __init__(
        self,
        estimate: FloatArray,
        low: FloatArray,
        high: FloatArray,
        p_value: FloatArray,
        baseline: FloatArray,
        candidate: FloatArray,
        scale: ArrayLike | None = None,
        kind: ArrayLike | None = None,
        note: ArrayLike | None = None,
    ) -> None:
        # (an explicit __init__, not the dataclass's: the stored per-row codes are always
        # arrays, whatever was passed)
        e = np.shape(estimate)[0]
        for name, value in (
            ("estimate", estimate),
            ("low", low),
            ("high", high),
            ("p_value", p_value),
            ("baseline", baseline),
            ("candidate", candidate),
            ("scale", _strings(scale, e, RATIO)),
            ("kind", _strings(kind, e, "")),
            ("note", _strings(note, e, "")),
        ):
            object.__setattr__(self, name, value)

    @property
    def significant(self) -> BoolArray:
        """Boolean (E,): the interval excludes zero (False where undefined)."""
        with np.errstate(invalid="ignore"):
            return (self.low > 0) | (self.high < 0)

    def covers(self, truth: float | FloatArray) -> BoolArray:
        """Boolean (E,): low ≤ truth ≤ high (False where undefined)."""
        with np.errstate(invalid="ignore"):
            return (self.low <= truth) & (truth <= self.high)

    def notes(self, i: int) -> tuple[str, ...]:
        note = self.rows().note[i]
        return tuple(c for c in note.split(",") if c) if note else ()

    def to_dict(self) -> dict[str, list[Any]]:
        return {
            "estimate": self.estimate.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "p_value": self.p_value.tolist(),
            "baseline": self.baseline.tolist(),
            "candidate": self.candidate.tolist(),
            "scale": [str(s) for s in self.scale],
            "kind": [str(s) for s in self.kind],
            "note": [str(s) for s in self.note],
        }

    def rows(self) -> _Rows:
        """The columns as Python lists (made once): a table's thousands of rows read
        their numbers from these rather than a numpy scalar at a time."""
        cached: _Rows | None = self.__dict__.get("_rows")
        if cached is None:
            cached = _Rows(
                self.estimate.tolist(),
                self.low.tolist(),
                self.high.tolist(),
                self.p_value.tolist(),
                self.baseline.tolist(),
                self.candidate.tolist(),
                [str(x) for x in self.scale],
                [str(x) for x in self.kind],
                [str(x) for x in self.note],
            )
            object.__setattr__(self, "_rows", cached)
        return cached

    def comparison(
        self,
        i: int,
        *,
        method: str,
        confidence: float,
        n_baseline: int,
        n_candidate: int,
        statistic: str,
        interval: str | None = None,
        warnings: tuple[StatWarning, ...] = (),
        choice: str = "",
    ) -> Comparison:
        """Row ``i`` as a Comparison at level ``confidence`` (`comparisons` of one row)."""
        return self.comparisons(
            [i],
            method=method,
            levels=[confidence],
            n_baseline=n_baseline,
            n_candidate=n_candidate,
            statistic=statistic,
            interval=interval,
            warnings=[warnings],
            choice=choice,
        )[0]

    def comparisons(
        self,
        rows: Sequence[int],
        *,
        method: str,
        levels: Sequence[float],
        n_baseline: int,
        n_candidate: int,
        statistic: str,
        warnings: Sequence[tuple[StatWarning, ...]],
        interval: str | None = None,
        choice: str = "",
    ) -> list[Comparison]:
        """Rows ``rows`` (samples of ``n_baseline`` and ``n_candidate`` runs) as Comparisons,
        row ``rows[j]`` at level ``levels[j]`` with ``warnings[j]``: made in one pass (a
        table makes thousands)."""
        r = self.rows()
        return [
            made(
                Comparison,
                {
                    "method": method,
                    "confidence": level,
                    "n_baseline": n_baseline,
                    "n_candidate": n_candidate,
                    "baseline_location": r.baseline[i],
                    "candidate_location": r.candidate[i],
                    "estimate": r.estimate[i],
                    "low": r.low[i],
                    "high": r.high[i],
                    "p_value": r.p_value[i],
                    "warnings": said,
                    "statistic": statistic,
                    "interval": interval if interval is not None else r.kind[i],
                    "scale": r.scale[i],
                    "p_raw": r.p_value[i],
                    "correction": "none",
                    "choice": choice,
                },
            )
            for i, level, said in zip(rows, levels, warnings)
        ]


class _Rows(NamedTuple):
    """`Intervals` as Python lists (`Intervals.rows`)."""

    estimate: list[float]
    low: list[float]
    high: list[float]
    p_value: list[float]
    baseline: list[float]
    candidate: list[float]
    scale: list[str]
    kind: list[str]
    note: list[str]


def as_batch(values: ArrayLike, name: str = "sample") -> FloatArray:
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


def check_levels(confidence: ArrayLike, e: int) -> FloatArray:
    """Confidence level(s) of a batch as an (E,) array: one level for every row, or one per
    row (a multiple-comparison correction gives each comparison its own)."""
    c = np.array(confidence, dtype=np.float64, copy=True)
    if c.ndim == 0:
        c = np.full(e, float(c))
    if c.shape != (e,) or not np.all((c > 0) & (c < 1)):
        raise ValueError(
            f"confidence must lie in (0, 1) (one level, or one per row), not {confidence!r}"
        )
    return c


def levels_per_row(confidence: float | Sequence[float] | FloatArray, n: int) -> list[float]:
    """The level of each of ``n`` comparisons: one level for all, or one per comparison."""
    if isinstance(confidence, (Sequence, np.ndarray)):
        return [float(c) for c in confidence]
    return [float(confidence)] * n


def pow2_scale(*batches: FloatArray) -> FloatArray:
    """Per row, a power of two near the largest |value| of the given (E, n) arrays (1 for
    all-zero rows): dividing by it is exact and brings values of any magnitude (1e-300 …
    1e300) to about 1, so that sums of squares neither overflow nor underflow."""
    top = np.max(np.concatenate([np.abs(b) for b in batches], axis=1), axis=1)
    _, e = np.frexp(np.where(top > 0, top, 1.0))
    return np.ldexp(1.0, e)


def positive_rows(a: FloatArray, b: FloatArray) -> BoolArray:
    """Boolean (E,): every run of both samples is > 0 (the ``ratio`` scale applies)."""
    both: BoolArray = np.all(a > 0, axis=1) & np.all(b > 0, axis=1)
    return both


def add_note(note: ObjectArray, where: BoolArray, code: str) -> ObjectArray:
    """``note`` with ``code`` appended on the rows of ``where`` (a new array)."""
    out = np.array(note, dtype=object, copy=True)
    for i in np.flatnonzero(where):
        out[i] = f"{out[i]},{code}" if out[i] else code
    return out


def reconcile(iv: Intervals, confidence: float | FloatArray) -> Intervals:
    """Settle the agreement rule where floating-point rounding alone breaks it.

    Each method's p-value inverts the test its interval is made of, so interval and p
    can only disagree when a bound sits within rounding of 0 exactly when p sits within
    rounding of α. There the bound is moved to 0 (p > α: the interval now touches 0) or
    just off it (p ≤ α), and the row is noted ``reconciled``; a larger disagreement is a
    defect and is noted ``disagreement`` (the simulation tests assert neither happens
    more than at rounding level).
    """
    alpha = 1.0 - confidence
    low, high, p = iv.low.copy(), iv.high.copy(), iv.p_value
    est = iv.estimate
    note = iv.note
    defined = ~(np.isnan(low) | np.isnan(high) | np.isnan(p))
    width = np.abs(high - low) + np.abs(est)
    tol = 1e-9 * np.where(width > 0, width, 1.0)
    # The estimate inside its interval: computed by different formulas (a ratio and the
    # exp of a log difference, say), they may differ in the last bits.
    with np.errstate(invalid="ignore"):
        out_low, out_high = defined & (est < low), defined & (est > high)
        far = (out_low & (low - est > tol)) | (out_high & (est - high > tol))
    if (out_low | out_high).any():
        low = np.where(out_low, est, low)
        high = np.where(out_high, est, high)
        note = add_note(note, far, "estimate_outside")
    with np.errstate(invalid="ignore"):
        sig = (low > 0) | (high < 0)
        want = p <= alpha
    bad = defined & (sig != want)
    if not bad.any():
        return Intervals(est, low, high, p, iv.baseline, iv.candidate, iv.scale, iv.kind, note)
    fixed = np.zeros_like(bad)
    for i in np.flatnonzero(bad):
        if want[i]:  # p ≤ α: the interval must exclude 0; a bound touches it
            if abs(low[i]) <= tol[i] and iv.estimate[i] > 0:
                low[i] = np.nextafter(0.0, 1.0)
                fixed[i] = True
            elif abs(high[i]) <= tol[i] and iv.estimate[i] < 0:
                high[i] = np.nextafter(0.0, -1.0)
                fixed[i] = True
        else:  # p > α: the interval must contain 0; a bound is a hair beyond it
            if 0 < low[i] <= tol[i]:
                low[i] = 0.0
                fixed[i] = True
            elif -tol[i] <= high[i] < 0:
                high[i] = 0.0
                fixed[i] = True
    note = add_note(note, fixed, "reconciled")
    note = add_note(note, bad & ~fixed, "disagreement")
    return Intervals(est, low, high, p, iv.baseline, iv.candidate, iv.scale, iv.kind, note)


#: The largest float below which a ratio-scale bound would read "−100%": a ratio of
#: positive runs is positive, so a lower bound that rounds to −1 is kept just above it.
ABOVE_MINUS_ONE = float(np.nextafter(-1.0, 0.0))


def finite_or_reason(iv: Intervals) -> Intervals:
    """Rows whose interval is not finite although it should be (a magnitude beyond what
    float64 can hold even after rescaling) become undefined, noted ``numerical_range``.
    On the ``ratio`` scale a lower bound that rounded to −1 (a ratio below 1e-16) is kept
    just above it."""
    ratio = iv.scale == RATIO
    if ratio.any():
        with np.errstate(invalid="ignore"):
            low = np.where(ratio & (iv.low <= -1), ABOVE_MINUS_ONE, iv.low)
            est = np.where(ratio & (iv.estimate <= -1), ABOVE_MINUS_ONE, iv.estimate)
        iv = Intervals(
            est, low, iv.high, iv.p_value, iv.baseline, iv.candidate, iv.scale, iv.kind, iv.note
        )
    bad = ~(np.isnan(iv.low) & np.isnan(iv.high)) & ~(
        np.isfinite(iv.low) & np.isfinite(iv.high) & np.isfinite(iv.estimate)
    )
    if not bad.any():
        return iv
    nan = np.where(bad, np.nan, 1.0)
    return Intervals(
        iv.estimate,
        iv.low * nan,
        iv.high * nan,
        np.where(bad, np.nan, iv.p_value),
        iv.baseline,
        iv.candidate,
        iv.scale,
        iv.kind,
        add_note(iv.note, bad, "numerical_range"),
    )


def scale_warning(
    scale: str,
    location: str = "mean",
    details: dict[str, Detail] | None = None,
) -> StatWarning | None:
    """The footnote a report owes its reader when a change is not a ratio."""
    if scale == ABSOLUTE:
        return StatWarning(
            "absolute_change",
            f"the baseline {location} is within its own noise of zero, so a relative change would "
            "be meaningless: the change and its interval are in the metric's own unit",
            dict(details or {}),
        )
    return None


#: Codes of `Intervals.note` that compare() turns into warnings, with their sentence.
NOTE_MESSAGES = {
    "numerical_range": "the values are beyond what float64 arithmetic can hold for this "
    "interval even after rescaling: no interval; rescale the metric's unit",
    "disagreement": "internal check failed: the interval and the p-value disagree; please report "
    "this with the runs",
    "estimate_outside": "internal check failed: the estimate fell outside its interval, which was "
    "extended to it; please report this with the runs",
}


def note_warnings(iv: Intervals, i: int) -> list[StatWarning]:
    return [
        StatWarning(code, NOTE_MESSAGES[code], {}) for code in iv.notes(i) if code in NOTE_MESSAGES
    ]
