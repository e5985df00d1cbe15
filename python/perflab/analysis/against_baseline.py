"""Every candidate variant against the baseline, per cell and metric (pure).

This is computed once here and rendered by every reporter (terminal, markdown,
CSV, JSON, HTML); reporters never recompute statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from perflab.analysis.comparison_table import (
    ComparedCell,
    ComparisonTable,
    Note,
    SpreadCell,
    SummarizedCell,
    dedupe_notes,
)
from perflab.analysis.dataset import Dataset
from perflab.analysis.engine import Engine, PendingRow
from perflab.analysis.overhead import overhead_metrics, overhead_warnings
from perflab.analysis.sweep import Sweeps, summarize_sweeps
from perflab.analysis.system_conditions import system_warnings
from perflab.errors import InputError
from perflab.stats import (
    CORRECTIONS,
    DEFAULT_METHOD,
    StatWarning,
    Verdict,
    classify,
    correct,
    diagnose_comparison,
    diagnose_sample,
)
from perflab.stats.auto import Choice
from perflab.stats.records import made
from perflab.stats.warnings import EXPLAINS

#: Above this many (cell, variant, metric) samples, diagnostics are off unless asked for.
DIAGNOSE_MAX_SAMPLES = 400


def compare_dataset(
    data: Dataset,
    *,
    method: str = DEFAULT_METHOD,
    method_options: dict[str, Any] | None = None,
    confidence: float | None = None,
    threshold: float = 0.0,
    correction: str = "holm",
    diagnostics: bool | None = None,
    metrics: Sequence[str] = (),
) -> ComparisonTable:
    """Every candidate vs the baseline per cell and metric, plus per-variant summaries.

    metrics: only these (by name, in this order; empty: every metric) — the table, the
    summaries, the correction's family and everything drawn from the result.

    method: ``auto`` (default: Welch, or Mann–Whitney where a cell's runs are outlying or
    skewed — `perflab.stats.auto`), or any method by name. correction: ``holm`` (default),
    ``bonferroni``, ``bh`` or ``none`` over the whole TLDR family (all cells × metrics ×
    candidates). Holm decides which changes are declared; a declared change keeps its
    interval at ``confidence``, and only a change significant alone but not after Holm is
    recomputed, at Holm's last step (where it contains zero). Bonferroni and BH intervals
    are recomputed at their adjusted levels. diagnostics: outliers, drift, bimodality, slow
    first runs, unequal variances and too-few-runs-to-resolve-the-threshold become
    warnings; ``None`` (default) runs them when the table has at most
    DIAGNOSE_MAX_SAMPLES samples (they cost ~10 ms each, and thousands of per-cell
    warnings would not be read anyway).
    """
    if metrics:
        data = select_metrics(data, metrics)
    if confidence is None:
        confidence = float(data.experiment.settings.get("confidence", 0.95))
    if correction not in CORRECTIONS:
        raise InputError(
            f"unknown correction '{correction}' (choose from {', '.join(CORRECTIONS)})"
        )
    engine = Engine(data, method, method_options)
    n_samples = len(data.cells) * len(data.variants) * len(data.metrics)
    skipped_diagnostics = diagnostics is None and n_samples > DIAGNOSE_MAX_SAMPLES
    if diagnostics is None:
        diagnostics = not skipped_diagnostics

    summaries, notes = _summaries(data, engine, confidence, diagnostics)
    pending: list[PendingRow] = [
        (cell_key, labels, variant, metric, None)
        for cell_key, labels in data.cells
        for metric in data.metrics
        for variant in data.variants
        if variant != data.baseline
    ]
    notes += _first_comparisons(data, engine, pending, confidence, threshold, diagnostics)
    statement = _correct(engine, pending, correction)
    comparisons = _compared_cells(pending, threshold)
    notes += _experiment_notes(data, n_samples if skipped_diagnostics else 0)
    sweeps = _sweeps(data, summaries, confidence, threshold)
    notes += [Note(w, "", variant, metric) for variant, metric, w in sweeps.warnings]
    spreads = _device_spreads(data, confidence)
    notes += [Note(w, x.cell_key, "", x.metric.name) for x in spreads for w in x.spread.warnings]
    notes = [_fit_advice(n, data.experiment.settings, engine.choices) for n in notes]
    return ComparisonTable(
        data,
        method,
        confidence,
        threshold,
        correction,
        statement,
        comparisons,
        summaries,
        dedupe_notes(notes),
        sweeps.rows,
        spreads,
    )


def _device_spreads(data: Dataset, confidence: float) -> list[SpreadCell]:
    """Per cell and metric whose runs two or more of a pool's devices made: each device's
    offset from the others over every variant's runs, and a warning naming a board apart."""
    from perflab.stats.device_offsets import device_spread

    out = []
    for cell_key, labels in data.cells:
        for metric in data.metrics:
            keys = [(cell_key, v, metric.name) for v in data.variants]
            keys = [k for k in keys if data.measured(k)]
            if data.devices_of(cell_key, metric.name, [k[1] for k in keys]) < 2:
                continue
            try:
                spread = device_spread(
                    [data.arrays[k] for k in keys],
                    [data.devices[k] for k in keys],
                    confidence,
                    better=metric.better,
                )
            except ValueError:  # a variant on devices the baseline never ran on
                continue
            out.append(SpreadCell(cell_key, labels, metric, spread))
    return out


def _compared_cells(pending: list[PendingRow], threshold: float) -> list[ComparedCell]:
    """The rows of the table, each with its verdict."""
    return [
        made(
            ComparedCell,
            {
                "cell_key": k,
                "labels": lab,
                "variant": v,
                "metric": m,
                "comparison": c,
                "verdict": classify(c, m.better, threshold) if c else Verdict.UNDEFINED,
            },
        )
        for k, lab, v, m, c in pending
    ]


def _sweeps(
    data: Dataset, summaries: list[SummarizedCell], confidence: float, threshold: float
) -> Sweeps:
    """The geometric mean across the cells, per candidate and metric."""
    by_sample = {
        (x.cell_key, x.variant, x.metric.name): x.summary
        for x in summaries
        if x.summary is not None
    }
    return summarize_sweeps(data, by_sample, confidence, threshold)


def select_metrics(data: Dataset, names: Sequence[str]) -> Dataset:
    """``data`` limited to the metrics ``names`` (in that order, repeats dropped); InputError,
    one line naming the metrics there are, for a name it does not have."""
    by_name = {m.name: m for m in data.metrics}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = ", ".join(by_name) or "none"
        raise InputError(f"no metric '{unknown[0]}' (metrics: {known})")
    return dataclasses.replace(data, metrics=[by_name[n] for n in dict.fromkeys(names)])


def _summaries(
    data: Dataset, engine: Engine, confidence: float, diagnostics: bool
) -> tuple[list[SummarizedCell], list[Note]]:
    """Every (cell, metric, variant) summary, with its warnings and diagnostics."""
    samples, measured = data.samples, data.measured
    keys = [(k, v, m.name) for k, _ in data.cells for m in data.metrics for v in data.variants]
    by_key = engine.summaries([key for key in keys if measured(key)], confidence)
    overheads = overhead_metrics(data)
    summaries: list[SummarizedCell] = []
    notes: list[Note] = []
    for cell_key, labels in data.cells:
        for metric in data.metrics:
            overhead = metric.name in overheads
            for variant in data.variants:
                where = (cell_key, variant, metric.name)
                summary = by_key.get(where)
                summaries.append(
                    made(
                        SummarizedCell,
                        {
                            "cell_key": cell_key,
                            "labels": labels,
                            "variant": variant,
                            "metric": metric,
                            "summary": summary,
                        },
                    )
                )
                if summary is None:
                    continue
                if summary.warnings:
                    notes += [Note(w, *where) for w in summary.warnings]
                if overhead:
                    notes += [
                        Note(w, *where)
                        for w in overhead_warnings(data, cell_key, variant, metric.name, confidence)
                    ]
                if diagnostics and len(values := samples[where]) >= 3:
                    values = _within_devices(values, data.devices.get(where))
                    d = diagnose_sample(values, in_order=True, better=metric.better)
                    notes += [Note(w, *where) for w in d.warnings]
    return summaries, notes


def _within_devices(values: list[float], devices: list[str] | None) -> list[float]:
    """A pool's runs less their device's mean (plus the runs' mean): the boards' offsets
    are no outliers, drift or second mode of the runs (`stats/device_offsets.py` reports
    them); runs of one device as they are."""
    if not devices or len(set(devices)) < 2:
        return values
    by_device: dict[str, list[float]] = {}
    for v, d in zip(values, devices):
        by_device.setdefault(d, []).append(v)
    means = {d: sum(vs) / len(vs) for d, vs in by_device.items()}
    mean = sum(values) / len(values)
    return [v - means[d] + mean for v, d in zip(values, devices)]


def _first_comparisons(
    data: Dataset,
    engine: Engine,
    pending: list[PendingRow],
    confidence: float,
    threshold: float,
    diagnostics: bool,
) -> list[Note]:
    """Fills ``pending`` with each comparison at ``confidence`` (where both sides have
    runs); returns their warnings and diagnostics."""
    samples, baseline, measured = data.samples, data.baseline, data.measured
    todo = [
        i
        for i, (k, _, v, m, _) in enumerate(pending)
        if measured((k, baseline, m.name)) and measured((k, v, m.name))
    ]
    notes: list[Note] = []
    computed = engine.compare([pending[i] for i in todo], [confidence] * len(todo))
    for i, comp in zip(todo, computed):
        cell_key, labels, variant, metric, _ = pending[i]
        pending[i] = (cell_key, labels, variant, metric, comp)
        where = (cell_key, variant, metric.name)
        if comp.warnings:  # too_few_runs: already said by the summary.
            notes += [Note(w, *where) for w in comp.warnings if w.code != "too_few_runs"]
        if not diagnostics:
            continue
        base_key = (cell_key, baseline, metric.name)
        base = _within_devices(samples[base_key], data.devices.get(base_key))
        cand = _within_devices(samples[where], data.devices.get(where))
        if len(base) >= 2 and len(cand) >= 2:
            notes += [
                Note(w, *where)
                for w in diagnose_comparison(
                    base, cand, comp, resolve=threshold or 0.01, confidence=confidence
                )
            ]
    return notes


def _correct(engine: Engine, pending: list[PendingRow], correction: str) -> str:
    """Applies the multiple-comparison correction to ``pending`` in place; returns the
    sentence saying what it controlled ("none" too: what an uncorrected table risks)."""
    done = [(i, c) for i, row in enumerate(pending) if (c := row[4]) is not None and c.defined]
    if not done:
        return ""
    defined = [i for i, _ in done]
    family = correct(
        [c for _, c in done],
        correction,
        holm_intervals="nominal",
        recompute_many=lambda js, levels: engine.compare([pending[defined[j]] for j in js], levels),
    )
    for j, i in enumerate(defined):
        cell_key, labels, variant, metric, _ = pending[i]
        pending[i] = (cell_key, labels, variant, metric, family.comparisons[j])
    return family.statement


def _experiment_notes(data: Dataset, skipped_samples: int) -> list[Note]:
    """Warnings about the experiment as a whole: skipped diagnostics, failed and pending runs."""
    notes = []
    if skipped_samples:
        notes.append(
            Note(
                StatWarning(
                    "diagnostics_skipped",
                    f"per-cell diagnostics (outliers, drift, bimodality, power) were skipped "
                    f"for this table of {skipped_samples} samples; compare a subset, or call "
                    f"compare_dataset(diagnostics=True) to run them",
                    {"samples": skipped_samples},
                )
            )
        )
    failed = len(data.failed)
    if failed:
        notes.append(
            Note(
                StatWarning(
                    "failed_runs",
                    f"{failed} run(s) failed or timed out and are left out; see "
                    f"`perflab show {data.experiment.id} --runs` for their reasons",
                    {"count": failed},
                )
            )
        )
    pending_runs = data.status_counts.get("pending", 0) + data.status_counts.get("running", 0)
    if pending_runs:
        notes.append(
            Note(
                StatWarning(
                    "incomplete",
                    f"experiment is incomplete: {pending_runs} run(s) not done yet; resume with "
                    f"`perflab run --resume {data.experiment.id}`",
                    {"pending": pending_runs},
                )
            )
        )
    notes += [Note(w) for w in system_warnings(data.system)]
    imported = data.experiment.settings.get("import") or {}
    for said in imported.get("warnings") or ():  # what the import found, said again
        notes.append(Note(StatWarning("import_setup", str(said), {})))
    return notes


def _fit_advice(
    note: Note, settings: dict[str, Any], choices: dict[tuple[str, str], Choice] | None = None
) -> Note:
    """Statistics cannot see the design; where its advice is already followed, say the next step."""
    w = note.warning
    message = w.message
    choice = (choices or {}).get((note.cell_key, note.metric))
    handled = None
    if w.code == "outliers" and choice is not None and choice.method == "mannwhitney":
        message = message.replace(
            ", and prefer --method mannwhitney if they are real",
            "; the comparison is Mann–Whitney's (chosen for them), which they barely move",
        )
        handled = EXPLAINS
    warmup = int(settings.get("warmup", 0) or 0)
    if w.code == "slow_first_run" and warmup > 0:
        message = message.replace(
            "add warmup = 1 to the spec", f"the spec already has warmup = {warmup}: raise it"
        )
    if w.code == "drift" and settings.get("order") == "interleaved":
        message = message.replace(
            'interleave variants (order = "interleaved") and use --method paired',
            "the runs are interleaved already: use --method paired",
        )
    if message == w.message and handled is None:
        return note
    return Note(
        StatWarning(w.code, message, dict(w.details), handled),
        note.cell_key,
        note.variant,
        note.metric,
    )
