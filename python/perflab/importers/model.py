"""What a tool's result file holds, as every format module returns it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sample:
    """One measured run of one benchmark, as the tool wrote it.

    ``labels`` name the benchmark (its name, sub-benchmark keys, arguments): they are
    always matrix parameters. ``config`` is what it ran under (Go's ``key: value`` lines,
    GOMAXPROCS, threads): a key is a parameter only where it varies within one file.
    ``values`` are metric → value, each in ``units[metric]`` (a unit may differ between
    samples, e.g. Google Benchmark's per-benchmark time unit; `assemble` makes it one).
    A failed sample (``status = "failed"``) has no values, and says why (``reason``: the
    exit status the tool recorded)."""

    where: str  # "file:line" or "file: $.json.path", for messages
    labels: dict[str, str]
    config: dict[str, str]
    values: dict[str, float]
    units: dict[str, str]
    status: str = "ok"
    reason: str | None = None


@dataclass
class ToolFile:
    """A result file read whole: its samples in file order, which direction is better for
    each metric (in order of first appearance), and what the tool recorded about the
    machine and the run (kept with the experiment; JSON values). ``stated`` are the
    directions the file states rather than guesses (Go's ``Unit … better=``): they hold
    for every file of an import."""

    path: Path
    samples: list[Sample]
    better: dict[str, str]
    context: dict[str, Any] = field(default_factory=dict)
    stated: dict[str, str] = field(default_factory=dict)
    #: what the reader fell back to, for the user (e.g. a tool's summaries, not its runs)
    note: str | None = None


#: Time units and their length in seconds (a metric's samples in several are converted
#: to the shortest of them).
TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
#: The same lengths as whole nanoseconds: a conversion multiplies by an exact whole ratio
#: (1 s is 1e9 ns exactly, where 1e-9 / 1e-9 · 1.0 gave 999999999.9999999).
TIME_UNIT_NS = {"ns": 1, "µs": 1_000, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def convert_time(value: float, unit: str, target: str) -> float:
    """``value`` in time unit ``unit`` as ``target`` (both of `TIME_UNITS`), exactly when
    the result is representable: the larger unit's whole ratio multiplies or divides."""
    a, b = TIME_UNIT_NS[unit], TIME_UNIT_NS[target]
    return value * (a // b) if a >= b else value / (b // a)


#: What marks a rate — work per unit of time, where more is better — in a metric's name
#: or unit: ``MB/s``, ``GB/s``, ``ops/s``, ``items_per_second``, ``bytes_per_sec``.
_RATE_ENDINGS = ("/s", "/sec", "_per_second", "_per_sec", "per_second")
#: Names that are rates by themselves (pytest-benchmark's ``ops``, I/O and queries a second).
_RATE_NAMES = frozenset({"ops", "iops", "qps", "rps", "tps"})


def better_of(name_or_unit: str) -> str:
    """The direction a tool's metric is better in when the file does not say: "higher"
    for a rate (its name or unit ends in ``/s`` or ``_per_second``, or is ``ops``), else
    "lower" (times, sizes, counts). One rule for every importer."""
    text = name_or_unit.strip().lower()
    return "higher" if text.endswith(_RATE_ENDINGS) or text in _RATE_NAMES else "lower"
