"""Comparisons of every variant against the baseline, per cell and metric (pure).

This is computed once here and rendered by every reporter (terminal, markdown,
CSV, JSON, HTML); reporters never recompute statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from perflab.analysis.dataset import Dataset
from perflab.stats import Comparison, StatWarning, Summary, Verdict, classify, get_method
from perflab.store import MetricDef


@dataclass(frozen=True)
class ComparedCell:
    cell_key: str
    labels: dict[str, str]
    variant: str
    metric: MetricDef
    comparison: Comparison | None  # None: a side has no successful run
    verdict: Verdict


@dataclass(frozen=True)
class SummarizedCell:
    cell_key: str
    labels: dict[str, str]
    variant: str
    metric: MetricDef
    summary: Summary | None  # None: no successful run


@dataclass(frozen=True)
class Note:
    """A warning with where it applies (empty fields: the whole experiment)."""

    warning: StatWarning
    cell_key: str = ""
    variant: str = ""
    metric: str = ""


@dataclass(frozen=True)
class CompareResult:
    dataset: Dataset
    method: str
    confidence: float
    threshold: float  # fraction; 0 = any significant change counts
    comparisons: list[ComparedCell] = field(default_factory=list)
    summaries: list[SummarizedCell] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def candidates(self) -> list[str]:
        return [v for v in self.dataset.variants if v != self.dataset.baseline]


def compare_dataset(data: Dataset, *, method: str = "welch", confidence: float | None = None,
                    threshold: float = 0.0) -> CompareResult:
    if confidence is None:
        confidence = float(data.experiment.settings.get("confidence", 0.95))
    impl = get_method(method)
    comparisons: list[ComparedCell] = []
    summaries: list[SummarizedCell] = []
    notes: list[Note] = []
    for cell_key, labels in data.cells:
        for metric in data.metrics:
            for variant in data.variants:
                values = data.sample(cell_key, variant, metric.name)
                summary = impl.summary(values, confidence) if values else None
                summaries.append(SummarizedCell(cell_key, labels, variant, metric, summary))
                if summary is not None:
                    notes += [Note(w, cell_key, variant, metric.name) for w in summary.warnings]
            base = data.sample(cell_key, data.baseline, metric.name)
            for variant in data.variants:
                if variant == data.baseline:
                    continue
                cand = data.sample(cell_key, variant, metric.name)
                comp = None
                verdict = Verdict.UNDEFINED
                if base and cand and _mean(base) != 0:
                    comp = impl.compare(base, cand, confidence)
                    verdict = classify(comp, metric.better, threshold)
                    notes += [Note(w, cell_key, variant, metric.name) for w in comp.warnings
                              if w.code != "too_few_runs"]  # already said by the summary
                comparisons.append(ComparedCell(cell_key, labels, variant, metric, comp, verdict))
    failed = len(data.failed)
    if failed:
        notes.append(Note(StatWarning(
            "failed_runs", f"{failed} run(s) failed or timed out and are left out; see "
            f"`perflab show {data.experiment.id} --runs` for their reasons", {"count": failed})))
    pending = data.status_counts.get("pending", 0) + data.status_counts.get("running", 0)
    if pending:
        notes.append(Note(StatWarning(
            "incomplete", f"experiment is incomplete: {pending} run(s) not done yet; resume with "
            f"`perflab run --resume {data.experiment.id}`", {"pending": pending})))
    return CompareResult(data, method, confidence, threshold, comparisons, summaries, _dedupe(notes))


def regressions(result: CompareResult, pct: float) -> list[ComparedCell]:
    """Comparisons significantly worse, with a point estimate worse than ``pct`` percent."""
    out = []
    for c in result.comparisons:
        if c.verdict is not Verdict.WORSE or c.comparison is None:
            continue
        worse_by = c.comparison.estimate if c.metric.better == "lower" else -c.comparison.estimate
        if worse_by * 100 > pct:
            out.append(c)
    return out


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _dedupe(notes: list[Note]) -> list[Note]:
    seen = set()
    out = []
    for n in notes:
        key = (n.warning.code, n.warning.message, n.cell_key, n.variant, n.metric)
        if key not in seen:
            seen.add(key)
            out.append(n)
    return out
