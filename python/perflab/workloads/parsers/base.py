"""The interface every output parser implements, and its error type."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from perflab.errors import InputError


class ParseError(InputError):
    """A command's output does not hold what the parser expects.

    The message is one line naming the parser, what it looked for and did not find.
    """


def json_number(raw: object, where: str, expected: str = "a number") -> float | None:
    """A finite float from a JSON value; None for null or NaN/inf (tools write missing
    values that way); ParseError naming ``where`` for anything that is not a number."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ParseError(f"{where}: expected {expected}, found {raw!r}")
    value = float(raw)
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class MetricDoc:
    """One documented metric (or family of metrics) a parser can produce.

    ``name`` may contain a placeholder in angle brackets, e.g. ``<type>_ops_per_sec``
    or ``p<N>_latency_ms``; the unit is also spelled in the name's suffix.
    """

    name: str
    unit: str
    description: str


class Parser(ABC):
    """Turns one command's output text into flat metrics ``{name: value}``.

    Metric names carry their unit as a suffix (``_ms``, ``_s``, ``_per_sec``); values are
    plain floats. A parser never decides statistics: it only reads numbers.
    """

    #: Registry name, used in experiment files (``parser = "memtier"``).
    name: ClassVar[str]
    #: One line saying what output the parser reads.
    summary: ClassVar[str]
    #: The metrics it can produce.
    metrics: ClassVar[tuple[MetricDoc, ...]]

    @abstractmethod
    def parse(self, text: str) -> dict[str, float]:
        """Metrics found in ``text``; raises `ParseError` when the expected output is absent."""

    def __repr__(self) -> str:
        return f"<parser {self.name}>"
