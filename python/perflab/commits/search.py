"""Where a bisect stands: the range of commits still in question and the next to test.

Commits are numbered 0..n-1, oldest first; n-1 is the bad end, and the good end sits
before 0 (position -1). The first bad commit is in (good, bad]; each decided candidate
halves that range. A candidate that cannot be measured (its build fails) is skipped as
`git bisect skip` does: the next one tried is the untested commit nearest the middle.
When only skipped commits separate the ends, the first bad one cannot be told among them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Search:
    size: int  # commits after the good end, the bad end last
    good: int = -1  # position of the latest commit known good (-1: the good end)
    bad: int = -2  # position of the earliest commit known bad (default: size - 1)
    skipped: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a bisect needs at least one commit after the good end")
        if self.bad == -2:
            self.bad = self.size - 1

    @property
    def untested(self) -> list[int]:
        """Positions strictly between the ends that were not skipped."""
        return [i for i in range(self.good + 1, self.bad) if i not in self.skipped]

    @property
    def found(self) -> bool:
        """The first bad commit is known: the ends are neighbours."""
        return self.bad - self.good == 1

    @property
    def stuck(self) -> bool:
        """Only skipped commits lie between the ends: the first bad one is among them and
        the bad end (`suspects`)."""
        return not self.found and not self.untested

    @property
    def suspects(self) -> list[int]:
        """Where the first bad commit can still be: (good, bad]."""
        return list(range(self.good + 1, self.bad + 1))

    def next(self) -> int | None:
        """The candidate to test: the untested position nearest the middle of the range
        (the lower one on a tie); None when found or stuck."""
        middle = (self.good + self.bad) / 2
        return min(self.untested, key=lambda i: (abs(i - middle), i), default=None)

    def mark(self, position: int, decision: str) -> None:
        """Record a candidate's ``decision``: "good", "bad" or "skip"."""
        if not self.good < position < self.bad:
            raise ValueError(f"position {position} is outside ({self.good}, {self.bad})")
        if decision == "good":
            self.good = position
        elif decision == "bad":
            self.bad = position
        elif decision == "skip":
            self.skipped.add(position)
        else:
            raise ValueError(f"decision must be good, bad or skip, not {decision!r}")


def expected_steps(size: int) -> int:
    """Steps a bisect of ``size`` commits takes without skips: ⌈log2(size)⌉."""
    return math.ceil(math.log2(size)) if size > 1 else 0
