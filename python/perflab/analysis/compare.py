"""Comparisons of every variant against the baseline, per cell and metric (pure).

This is computed once here and rendered by every reporter (terminal, markdown,
CSV, JSON, HTML); reporters never recompute statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.analysis.dataset import Dataset
from perflab.analysis.sweep import SweepRow, summarize_sweeps
from perflab.analysis.overhead import overhead_metrics, overhead_warnings
from perflab.errors import InputError
from perflab.stats import (CORRECTIONS, Comparison, StatWarning, Summary, Verdict, classify, correct,
                           diagnose_comparison, diagnose_sample, get_method)
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
    correction: str = "holm"  # multiple-comparison correction applied to the TLDR family
    correction_statement: str = ""  # what it controlled, one sentence for under the table
    comparisons: list[ComparedCell] = field(default_factory=list)
    summaries: list[SummarizedCell] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    sweeps: list[SweepRow] = field(default_factory=list)  # geometric mean across cells (≥ 2 cells)

    @property
    def candidates(self) -> list[str]:
        return [v for v in self.dataset.variants if v != self.dataset.baseline]


#: Above this many (cell, variant, metric) samples, diagnostics are off unless asked for.
DIAGNOSE_MAX_SAMPLES = 400


def compare_dataset(data: Dataset, *, method: str = "welch", method_options: dict | None = None,
                    confidence: float | None = None, threshold: float = 0.0,
                    correction: str = "holm", diagnostics: bool | None = None) -> CompareResult:
    """Every candidate vs the baseline per cell and metric, plus per-variant summaries.

    correction: ``holm`` (default), ``bonferroni``, ``bh`` or ``none`` over the whole TLDR
    family (all cells × metrics × candidates). Holm decides which changes are declared; a
    declared change keeps its interval at ``confidence``, and only a change significant
    alone but not after Holm is recomputed, at Holm's last step (where it contains zero).
    Bonferroni and BH intervals are recomputed
    at their adjusted levels. diagnostics: outliers, drift, bimodality, slow first runs, unequal
    variances and too-few-runs-to-resolve-the-threshold become warnings; ``None`` (default)
    runs them when the table has at most DIAGNOSE_MAX_SAMPLES samples (they cost ~10 ms each,
    and thousands of per-cell warnings would not be read anyway).
    """
    if confidence is None:
        confidence = float(data.experiment.settings.get("confidence", 0.95))
    if correction not in CORRECTIONS:
        raise InputError(f"unknown correction '{correction}' (choose from {', '.join(CORRECTIONS)})")
    try:
        impl = get_method(method, **(method_options or {}))
    except ValueError as e:
        raise InputError(str(e)) from None
    paired = method == "paired"
    n_samples = len(data.cells) * len(data.variants) * len(data.metrics)
    skipped_diagnostics = diagnostics is None and n_samples > DIAGNOSE_MAX_SAMPLES
    if diagnostics is None:
        diagnostics = not skipped_diagnostics

    overheads = overhead_metrics(data)

    def run_compare(cell_key: str, variant: str, metric: str, level: float) -> Comparison:
        base = data.sample(cell_key, data.baseline, metric)
        cand = data.sample(cell_key, variant, metric)
        try:
            if paired:
                return impl.compare(base, cand, level,
                                    baseline_blocks=data.blocks[(cell_key, data.baseline, metric)],
                                    candidate_blocks=data.blocks[(cell_key, variant, metric)])
            return impl.compare(base, cand, level)
        except ValueError as e:
            raise InputError(f"{method} at {cell_key} · {variant} · {metric}: {e}") from None

    summaries: list[SummarizedCell] = []
    notes: list[Note] = []
    pending: list[tuple[str, dict, str, MetricDef, Comparison | None]] = []
    # Summaries: all at once where the method can (one vectorized pass per sample size).
    keys = [(k, v, m.name) for k, _ in data.cells for m in data.metrics for v in data.variants]
    present = [key for key in keys if data.sample(*key)]
    if hasattr(impl, "summary_many"):
        made = impl.summary_many([data.sample(*key) for key in present], confidence)
    else:
        made = [impl.summary(data.sample(*key), confidence) for key in present]
    by_key = dict(zip(present, made))
    for cell_key, labels in data.cells:
        for metric in data.metrics:
            for variant in data.variants:
                values = data.sample(cell_key, variant, metric.name)
                summary = by_key.get((cell_key, variant, metric.name))
                summaries.append(SummarizedCell(cell_key, labels, variant, metric, summary))
                if summary is not None:
                    notes += [Note(w, cell_key, variant, metric.name) for w in summary.warnings]
                    if metric.name in overheads:
                        notes += [Note(w, cell_key, variant, metric.name) for w in
                                  overhead_warnings(data, cell_key, variant, metric.name, confidence)]
                    if diagnostics and len(values) >= 3:
                        d = diagnose_sample(values, in_order=True, better=metric.better)
                        notes += [Note(w, cell_key, variant, metric.name) for w in d.warnings]
            for variant in data.variants:
                if variant != data.baseline:
                    pending.append((cell_key, labels, variant, metric, None))
    # The comparisons: all at once where the method can (Welch: one vectorized call per
    # sample size), else one by one. A zero baseline is compared on the absolute scale.
    def compare_rows(rows: list, levels: list[float]) -> list[Comparison]:
        """The comparisons of ``rows`` of ``pending``, each at its level."""
        if hasattr(impl, "compare_many") and not paired:
            try:
                return impl.compare_many([(data.sample(k, data.baseline, m.name), data.sample(k, v, m.name))
                                          for k, _, v, m, _ in rows], levels)
            except ValueError as e:
                raise InputError(f"{method}: {e}") from None
        return [run_compare(k, v, m.name, level) for (k, _, v, m, _), level in zip(rows, levels)]

    todo = [i for i, (k, _, v, m, _) in enumerate(pending)
            if data.sample(k, data.baseline, m.name) and data.sample(k, v, m.name)]
    computed = compare_rows([pending[i] for i in todo], [confidence] * len(todo))
    for i, comp in zip(todo, computed):
        cell_key, labels, variant, metric, _ = pending[i]
        pending[i] = (cell_key, labels, variant, metric, comp)
        notes += [Note(w, cell_key, variant, metric.name) for w in comp.warnings
                  if w.code != "too_few_runs"]  # already said by the summary
        base, cand = data.sample(cell_key, data.baseline, metric.name), data.sample(cell_key, variant, metric.name)
        if diagnostics and len(base) >= 2 and len(cand) >= 2:
            notes += [Note(w, cell_key, variant, metric.name) for w in
                      diagnose_comparison(base, cand, comp, resolve=threshold or 0.01, confidence=confidence)]
    statement = ""
    defined = [i for i, p in enumerate(pending) if p[4] is not None and p[4].defined]
    if defined:  # "none" too: the statement says what an uncorrected table risks
        family = correct([pending[i][4] for i in defined], correction, holm_intervals="nominal",
                         recompute_many=lambda js, levels: compare_rows([pending[defined[j]] for j in js], levels))
        statement = family.statement
        for j, i in enumerate(defined):
            cell_key, labels, variant, metric, _ = pending[i]
            pending[i] = (cell_key, labels, variant, metric, family.comparisons[j])
    comparisons = [ComparedCell(k, lab, v, m, c, classify(c, m.better, threshold) if c else Verdict.UNDEFINED)
                   for k, lab, v, m, c in pending]
    if skipped_diagnostics:
        notes.append(Note(StatWarning(
            "diagnostics_skipped", f"per-cell diagnostics (outliers, drift, bimodality, power) were skipped "
            f"for this table of {n_samples} samples; compare a subset, or call compare_dataset("
            f"diagnostics=True) to run them", {"samples": n_samples})))
    failed = len(data.failed)
    if failed:
        notes.append(Note(StatWarning(
            "failed_runs", f"{failed} run(s) failed or timed out and are left out; see "
            f"`perflab show {data.experiment.id} --runs` for their reasons", {"count": failed})))
    pending_runs = data.status_counts.get("pending", 0) + data.status_counts.get("running", 0)
    if pending_runs:
        notes.append(Note(StatWarning(
            "incomplete", f"experiment is incomplete: {pending_runs} run(s) not done yet; resume with "
            f"`perflab run --resume {data.experiment.id}`", {"pending": pending_runs})))
    sweeps = summarize_sweeps(data, {(x.cell_key, x.variant, x.metric.name): x.summary for x in summaries
                                     if x.summary is not None}, confidence, threshold)
    notes += [Note(w, "", variant, metric) for variant, metric, w in sweeps.warnings]
    notes = [_fit_advice(n, data.experiment.settings) for n in notes]
    return CompareResult(data, method, confidence, threshold, correction, statement, comparisons,
                         summaries, dedupe_notes(notes), sweeps.rows)


def _fit_advice(note: Note, settings: dict) -> Note:
    """Statistics cannot see the design; where its advice is already followed, say the next step."""
    w = note.warning
    message = w.message
    warmup = int(settings.get("warmup", 0) or 0)
    if w.code == "slow_first_run" and warmup > 0:
        message = message.replace("add warmup = 1 to the spec",
                                  f"the spec already has warmup = {warmup}: raise it")
    if w.code == "drift" and settings.get("order") == "interleaved":
        message = message.replace('interleave variants (order = "interleaved") and use --method paired',
                                  "the runs are interleaved already: use --method paired")
    if message == w.message:
        return note
    return Note(StatWarning(w.code, message, dict(w.details)), note.cell_key, note.variant, note.metric)


def regressions(result: CompareResult, pct: float) -> list[ComparedCell]:
    """Comparisons significantly worse, with a point estimate worse than ``pct`` percent
    (a change on the absolute scale — a baseline within its noise of zero — has no percentage:
    significantly worse is worse than any)."""
    out = []
    for c in result.comparisons:
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
