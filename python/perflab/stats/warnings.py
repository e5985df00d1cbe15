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
    #: `EXPLAINS` when what it found was dealt with in this comparison although its code
    #: is `READING` by default (outlying runs compared by ranks); None: by the code
    handled: str | None = None

    @property
    def kind(self) -> str:
        """`READING` (it changes how a cell or the summary must be read) or `EXPLAINS`
        (it explains what perflab already did about something): `kind_of`, unless
        ``handled`` says so."""
        return self.handled or kind_of(self.code)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "kind": self.kind,
            "message": self.message,
            "details": {k: list(v) if isinstance(v, tuple) else v for k, v in self.details.items()},
        }


#: The two kinds of warning (docs/statistics.md, "Two kinds of warning"). A warning that
#: changes how a cell or the summary must be read — a verdict resting on too few runs, runs
#: in two groups, a machine that was busy, runs that failed, a geometric mean hiding cells
#: that go opposite ways — is shown under the table, worst first. One that explains what
#: perflab already did about something — the method chosen for outlying runs, ties
#: handled by the test, a slow first run (what warm-ups are for), Welch's allowance for
#: unequal variances, an interval replaced or approximated — is shown with ``--verbose``,
#: in the report and in ``--json``, and as a mark on the cells it concerns.
READING, EXPLAINS = "reading", "explains"
#: The codes of `EXPLAINS` warnings; every other code is `READING` (a new kind of warning
#: is shown until it is placed here). Outlying runs are `READING` unless the comparison
#: took ranks for them (`StatWarning.handled`): then they barely move it; a geometric
#: mean over cells that differ is `READING` when they go opposite ways (the average then
#: hides a gain and a loss), else `EXPLAINS` (each cell is in the table).
EXPLAINING_CODES = frozenset(
    {
        "ties",
        "slow_first_run",
        "unequal_variances",
        "absolute_change",
        "interval_replaced",
        "interval_approximated",
        "interval_guarded",
        "baseline_uncertainty",
        "incomplete_blocks",
        "diagnostics_skipped",
    }
)
#: `READING` codes, worst first: what most changes the reading of the table comes first
#: (codes not listed follow, in the order they were found).
READING_ORDER = (
    "failed_runs",
    "incomplete",
    "no_runs",
    "import_setup",
    "system_load",
    "busy_processes",
    "thermal_throttling",
    "preempted",
    "memory_low",
    "swap_grew",
    "too_few_runs",
    "bimodal",
    "outliers",
    "drift",
    "odd_device",
    "sweep_heterogeneous",
    "ratio_unbounded",
    "quantile_in_gap",
)


def kind_of(code: str) -> str:
    """`EXPLAINS` for a code of `EXPLAINING_CODES`, else `READING`."""
    return EXPLAINS if code in EXPLAINING_CODES else READING


def reading_rank(code: str) -> int:
    """Where a `READING` code stands in `READING_ORDER` (unlisted codes after them all)."""
    return READING_ORDER.index(code) if code in READING_ORDER else len(READING_ORDER)
