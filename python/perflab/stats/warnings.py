"""Typed statistical warnings: data attached to results, printed only by reporters.

Each warning says what to do about it (e.g. how many runs are needed). Codes a report
may want to footnote on a comparison: ``absolute_change`` (the change is in the metric's
unit: the baseline is within its noise of zero), ``ratio_unbounded`` (a bound of the
ratio's interval is a stand-in for −100% or +∞ at this level), ``interval_replaced`` (the
requested interval would have reached −100% or needs positive runs: another, agreeing with
the same test, is shown), ``baseline_uncertainty``, ``ties``, ``too_few_runs``.
Sentences never contain "inf" or "nan".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

#: A number behind a warning's message: plain floats/ints/strings, or tuples of ints.
Detail: TypeAlias = float | int | str | tuple[int, ...]


@dataclass(frozen=True)
class StatWarning:
    """A diagnostic about a sample or a comparison.

    code:    stable machine identifier, e.g. ``"too_few_runs"``.
    message: one sentence for a person, ending with what to do.
    details: numbers behind the message (plain floats/ints/strings, or tuples of ints
             such as the indices of flagged runs).
    """

    code: str
    message: str
    details: dict[str, Detail] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "details": {k: list(v) if isinstance(v, tuple) else v for k, v in self.details.items()},
        }
