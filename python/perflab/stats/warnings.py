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
    details: numbers behind the message (plain floats/ints/strings, or tuples of ints
             such as the indices of flagged runs).
    """

    code: str
    message: str
    details: dict[str, float | int | str | tuple[int, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "message": self.message,
            "details": {k: list(v) if isinstance(v, tuple) else v for k, v in self.details.items()},
        }
