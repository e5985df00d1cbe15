"""Typed statistical warnings: data attached to results, printed only by reporters.

Each warning says what to do about it (e.g. how many runs are needed).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StatWarning:
    """A diagnostic about a sample or a comparison.

    code:    stable machine identifier, e.g. ``"too_few_runs"``.
    message: one sentence for a person, ending with what to do.
    details: numbers behind the message (plain floats/ints/strings only).
    """

    code: str
    message: str
    details: dict[str, float | int | str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "details": dict(self.details)}
