"""A comparison's table: every compared cell (`ComparedCell`, a row of the TLDR table),
every variant's summary per cell, the warnings with where they apply, and the geometric
mean across the cells — what `against_baseline`, `across` and `experiment_pair` compute
and every renderer draws (pure values)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from perflab.analysis.dataset import Dataset
from perflab.analysis.sweep import SweepRow
from perflab.stats import Comparison, StatWarning, Summary, Verdict
from perflab.stats.device_offsets import DeviceSpread
from perflab.store import MetricDef


@dataclass(frozen=True)
class ComparedCell:
    """One candidate variant against the baseline (or, across, a cell against the
    reference cell), in one cell, for one metric: a row of the TLDR table.

    ``comparison`` is None where a side has no successful run; the flat fields below
    (``estimate``, ``low``, ``high``, ``p``…) then read NaN, 0 or "". estimate, low, high:
    the change and its interval — fractions (0.143 = +14.3%) on the ``ratio`` and
    ``relative`` scales, the metric's own unit on the ``absolute`` scale (a baseline within
    its noise of zero). p: the unadjusted p-value; p_adjusted: after the multiple-comparison
    correction (equal with ``correction="none"``). significant: the (corrected) interval
    excludes no change. verdict: ``better``, ``worse``, ``ns``, ``within_noise`` or
    ``undefined`` (a `Verdict`, equal to its string).
    """

    cell_key: str
    labels: dict[str, str]
    variant: str
    metric: MetricDef
    comparison: Comparison | None  # None: a side has no successful run
    verdict: Verdict

    @property
    def cell(self) -> str:
        return self.cell_key

    @property
    def n_baseline(self) -> int:
        return self.comparison.n_baseline if self.comparison else 0

    @property
    def n_variant(self) -> int:
        return self.comparison.n_candidate if self.comparison else 0

    @property
    def baseline_location(self) -> float:
        return self.comparison.baseline_location if self.comparison else math.nan

    @property
    def variant_location(self) -> float:
        return self.comparison.candidate_location if self.comparison else math.nan

    @property
    def estimate(self) -> float:
        return self.comparison.estimate if self.comparison else math.nan

    @property
    def low(self) -> float:
        return self.comparison.low if self.comparison else math.nan

    @property
    def high(self) -> float:
        return self.comparison.high if self.comparison else math.nan

    @property
    def p(self) -> float:
        """The unadjusted p-value."""
        return self.comparison.p_raw if self.comparison else math.nan

    @property
    def p_adjusted(self) -> float:
        """The p-value after the multiple-comparison correction."""
        return self.comparison.p_value if self.comparison else math.nan

    @property
    def significant(self) -> bool:
        return bool(self.comparison.significant) if self.comparison else False


@dataclass(frozen=True)
class SummarizedCell:
    cell_key: str
    labels: dict[str, str]
    variant: str
    metric: MetricDef
    summary: Summary | None  # None: no successful run


@dataclass(frozen=True)
class SpreadCell:
    """The devices of a pool in one cell, for one metric: each one's offset from the
    others' mean over every variant's runs (`perflab.stats.device_offsets`)."""

    cell_key: str
    labels: dict[str, str]
    metric: MetricDef
    spread: DeviceSpread


@dataclass(frozen=True)
class Note:
    """A warning with where it applies (empty fields: the whole experiment)."""

    warning: StatWarning
    cell_key: str = ""
    variant: str = ""
    metric: str = ""


@dataclass(frozen=True)
class ComparisonTable:
    dataset: Dataset
    method: str
    confidence: float
    threshold: float  # fraction; 0 = any significant change counts
    correction: str = "holm"  # multiple-comparison correction applied to the TLDR family
    correction_statement: str = ""  # what it controlled, one sentence for under the table
    comparisons: list[ComparedCell] = field(default_factory=list)
    summaries: list[SummarizedCell] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    sweeps: list[SweepRow] = field(default_factory=list)  # geometric mean across cells (≥ 2 cells)
    # a pool's runs: how far each device sits from the others, per cell and metric
    device_spreads: list[SpreadCell] = field(default_factory=list)

    @property
    def candidates(self) -> list[str]:
        return [v for v in self.dataset.variants if v != self.dataset.baseline]


def regressions(table: ComparisonTable, pct: float) -> list[ComparedCell]:
    """Comparisons significantly worse, with a point estimate worse than ``pct`` percent
    (a change on the absolute scale — a baseline within its noise of zero — has no percentage:
    significantly worse is worse than any)."""
    out = []
    for c in table.comparisons:
        if c.verdict is not Verdict.WORSE or c.comparison is None:
            continue
        if c.comparison.scale == "absolute":
            out.append(c)
            continue
        worse_by = c.comparison.estimate if c.metric.better == "lower" else -c.comparison.estimate
        if worse_by * 100 > pct:
            out.append(c)
    return out


def dedupe_notes(notes: list[Note]) -> list[Note]:
    """The notes in order, each (code, message, place) once."""
    seen = set()
    out = []
    for n in notes:
        key = (n.warning.code, n.warning.message, n.cell_key, n.variant, n.metric)
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out
