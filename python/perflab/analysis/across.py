"""Every cell of one experiment against a reference cell, within each variant
(`perflab compare ID --across PARAM=VALUE`).

Semantics: the *reference* of a cell is the cell with ``PARAM=VALUE`` and the same values of
the other matrix parameters; each variant's runs in a cell are compared with the same
variant's runs in its reference ("how much faster is 28 instances than 1, for the kernel's
stack; and for Onload's"). Cells without a reference (a sparse matrix) are left out, with a
note.

No second comparison engine: the comparison is `compare_dataset` of a transformed `Dataset`
(as `perflab.analysis.experiment_pair` does for two experiments) whose two "variants" are the
reference and the cell, and whose cells are the compared cells × the experiment's variants.
So the methods, intervals, corrections (one family: every cell × variant × metric) and
diagnostics are those of an ordinary comparison. The result is then relabelled for the
reporters: the baseline is named ``PARAM=VALUE``, the candidates are the experiment's
variants, the rows are the cells other than the references, the summaries are every cell's
(references included), and the geometric mean across the cells is per variant — "the average
gain across the sweep relative to one instance" — from the summaries already made, allowing for
the runs the cells of one reference share (`perflab.analysis.across_sweep`). ``settings["across"]`` of the result's experiment says what was compared with what
(`across_fields`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from perflab.analysis.across_sweep import across_sweep_row
from perflab.analysis.against_baseline import compare_dataset
from perflab.analysis.comparison_table import (
    ComparedCell,
    ComparisonTable,
    Note,
    SummarizedCell,
    dedupe_notes,
)
from perflab.analysis.dataset import Dataset, parse_number
from perflab.analysis.sweep import SweepRow
from perflab.errors import InputError
from perflab.stats import DEFAULT_METHOD, StatWarning, Summary

#: The internal name of the compared cell's side (the reference's is ``PARAM=VALUE``).
_CELL = "cell"


@dataclass(frozen=True)
class Across:
    """The transformed dataset and how to read it back.

    dataset:   two variants (``reference``, the baseline, and the cell); one cell per compared
               cell × variant of the experiment.
    original:  the experiment's own dataset.
    origin:    internal cell key → (the experiment's cell key, variant).
    reference_of: compared cell key → its reference cell key.
    compared:  the compared cells (key, labels), in the experiment's order.
    """

    param: str
    value: str  # the reference value's label, as the matrix names it
    reference: str  # "PARAM=VALUE": the name of the baseline side
    dataset: Dataset
    original: Dataset
    origin: dict[str, tuple[str, str]]
    reference_of: dict[str, str]
    compared: list[tuple[str, dict[str, str]]]
    notes: list[StatWarning] = field(default_factory=list)


def _reference_label(data: Dataset, param: str, value: str) -> str:
    """The label of ``param``'s value ``value`` in the matrix (``1K`` also matches 1000);
    InputError for an unknown parameter, a value not in the matrix, a single value."""
    if param not in data.params:
        known = ", ".join(data.params) or "none: the experiment has no matrix"
        raise InputError(f"--across: no matrix parameter '{param}' (parameters: {known})")
    labels = list(dict.fromkeys(lab.get(param, "") for _, lab in data.cells))
    if len(labels) < 2:
        raise InputError(
            f"--across {param}={value}: {param} has one value only ({', '.join(labels)}); "
            "there is no other cell to compare with it"
        )
    if value in labels:
        return value
    x = parse_number(value)
    for key, lab in data.cells:
        label = lab.get(param, "")
        raw = data.values.get(key, {}).get(param, label)
        if x is not None and x in (parse_number(raw), parse_number(label)):
            return label
    raise InputError(
        f"--across {param}={value}: {param} has no value '{value}' (values: {', '.join(labels)})"
    )


def across_dataset(data: Dataset, param: str, value: str) -> Across:
    """Every cell of ``data`` against its cell with ``param`` = ``value`` (module doc)."""
    label = _reference_label(data, param, value)
    reference = f"{param}={label}"
    if reference in data.variants:  # a variant of that very name: keep the two apart
        reference += " (reference)"
    others = [p for p in data.params if p != param]
    refs = {
        tuple(lab.get(p, "") for p in others): key
        for key, lab in data.cells
        if lab.get(param) == label
    }
    compared: list[tuple[str, dict[str, str]]] = []
    reference_of: dict[str, str] = {}
    orphans: list[str] = []
    for key, lab in data.cells:
        if lab.get(param) == label:
            continue
        ref = refs.get(tuple(lab.get(p, "") for p in others))
        if ref is None:
            orphans.append(key)
            continue
        compared.append((key, lab))
        reference_of[key] = ref
    if not compared:
        raise InputError(
            f"--across {reference}: no cell has a reference cell with {reference} and the "
            f"same {', '.join(others)}"
        )
    notes = []
    if orphans:
        notes.append(
            StatWarning(
                "across_no_reference",
                f"cells without a cell at {reference} and the same {', '.join(others)}, "
                f"left out: {', '.join(orphans)}",
                {"cells": ", ".join(orphans)},
            )
        )
    internal, origin = _internal(data, param, label, reference, compared, reference_of)
    return Across(param, label, reference, internal, data, origin, reference_of, compared, notes)


def _internal(
    data: Dataset,
    param: str,
    label: str,
    reference: str,
    compared: list[tuple[str, dict[str, str]]],
    reference_of: dict[str, str],
) -> tuple[Dataset, dict[str, tuple[str, str]]]:
    """The dataset `compare_dataset` sees: the reference and the cell as its two variants,
    one cell per compared cell × variant of the experiment (a ``variant`` column added)."""
    vparam = "variant" if "variant" not in data.params else "variant_"
    cells: list[tuple[str, dict[str, str]]] = []
    samples: dict[tuple[str, str, str], list[float]] = {}
    blocks: dict[tuple[str, str, str], list[int]] = {}
    values: dict[str, dict[str, Any]] = {}
    origin: dict[str, tuple[str, str]] = {}
    for key, lab in compared:
        ref = reference_of[key]
        for v in data.variants:
            ikey = f"{key},{vparam}={v}"
            cells.append((ikey, {**lab, vparam: v}))
            origin[ikey] = (key, v)
            values[ikey] = dict(data.values.get(key, {}))
            for m in data.metrics:
                for side, cell in ((reference, ref), (_CELL, key)):
                    samples[(ikey, side, m.name)] = data.sample(cell, v, m.name)
                    blocks[(ikey, side, m.name)] = data.blocks.get((cell, v, m.name), [])
    e = data.experiment
    settings = {**e.settings, "across": _info(param, label, reference, reference_of)}
    row = dataclasses.replace(e, baseline=reference, settings=settings)
    internal = dataclasses.replace(
        data,
        experiment=row,
        params=[*data.params, vparam],
        cells=cells,
        variants=[reference, _CELL],
        samples=samples,
        blocks=blocks,
        values=values,
    )
    return internal, origin


def _info(param: str, label: str, reference: str, reference_of: dict[str, str]) -> dict[str, Any]:
    return {
        "param": param,
        "value": label,
        "reference": reference,
        "references": dict(reference_of),
    }


def across_fields(result: ComparisonTable) -> dict[str, Any] | None:
    """What an across-cells comparison compared (for JSON): ``{"param", "value",
    "reference", "references": {cell: its reference cell}}``; None for any other result."""
    info = result.dataset.experiment.settings.get("across")
    return dict(info) if isinstance(info, dict) else None


def compare_across(
    across: Across, *, method: str = DEFAULT_METHOD, **options: Any
) -> ComparisonTable:
    """`compare_dataset` of the transformed dataset (same options), read back as the
    experiment's cells × variants against their references (module doc)."""
    inner = compare_dataset(across.dataset, method=method, **options)
    origin = across.origin
    data = across.original
    cell_index = {k: i for i, (k, _) in enumerate(data.cells)}
    metric_index = {m.name: i for i, m in enumerate(data.metrics)}
    variant_index = {v: i for i, v in enumerate(data.variants)}
    labels = dict(data.cells)
    comparisons = [
        ComparedCell(
            origin[c.cell_key][0],
            labels[origin[c.cell_key][0]],
            origin[c.cell_key][1],
            c.metric,
            c.comparison,
            c.verdict,
        )
        for c in inner.comparisons
    ]
    comparisons.sort(
        key=lambda c: (
            cell_index[c.cell_key],
            metric_index[c.metric.name],
            variant_index[c.variant],
        )
    )
    summaries, by_sample = _summaries(across, inner)
    shown = _shown(across, inner)
    sweeps, sweep_notes = _sweeps(across, shown, by_sample, inner.confidence, inner.threshold)
    notes = [Note(w) for w in across.notes]
    notes += [_note(across, n) for n in inner.notes if not n.warning.code.startswith("sweep_")]
    notes += sweep_notes
    return dataclasses.replace(
        inner,
        dataset=shown,
        comparisons=comparisons,
        summaries=summaries,
        notes=dedupe_notes(notes),
        sweeps=sweeps,
    )


def run_view(across: Across, result: ComparisonTable) -> ComparisonTable:
    """``result`` (`compare_across`'s) over the experiment's own cells and variants, the
    reference cells included: what a report's plots of runs draw (each cell's runs as they
    ran; the reference, ``PARAM=VALUE``, is a cell there, not a variant). The baseline is
    still named ``PARAM=VALUE``: changes are drawn against it."""
    shown = result.dataset
    return dataclasses.replace(
        result,
        dataset=dataclasses.replace(
            across.original, experiment=shown.experiment, metrics=shown.metrics
        ),
    )


def _shown(across: Across, inner: ComparisonTable) -> Dataset:
    """The dataset the reporters draw: the experiment's matrix without the reference cells,
    the reference (``PARAM=VALUE``) as the baseline and the experiment's variants as the
    candidates."""
    data = across.original
    e = data.experiment
    others = [p for p in data.params if p != across.param]
    same = f" and the same {', '.join(others)}" if others else ""
    row = dataclasses.replace(
        e,
        baseline=across.reference,
        description=f"across {across.param}: each cell against the cell with "
        f"{across.param}={across.value}{same}, within each variant",
        settings=inner.dataset.experiment.settings,
    )
    return dataclasses.replace(
        data,
        experiment=row,
        metrics=inner.dataset.metrics,
        cells=list(across.compared),
        variants=[across.reference, *data.variants],
    )


def _summaries(
    across: Across, inner: ComparisonTable
) -> tuple[list[SummarizedCell], dict[tuple[str, str, str], Summary | None]]:
    """Every cell's summaries (references included), in the experiment's order, and by
    (the experiment's cell, variant, metric)."""
    by_sample: dict[tuple[str, str, str], Summary | None] = {}
    for s in inner.summaries:
        cell, variant = across.origin[s.cell_key]
        if s.variant != _CELL:
            cell = across.reference_of[cell]
        by_sample.setdefault((cell, variant, s.metric.name), s.summary)
    data = across.original
    out = [
        SummarizedCell(key, lab, v, m, by_sample[(key, v, m.name)])
        for key, lab in data.cells
        for m in inner.dataset.metrics
        for v in data.variants
        if (key, v, m.name) in by_sample
    ]
    return out, by_sample


def _sweeps(
    across: Across,
    shown: Dataset,
    by_sample: dict[tuple[str, str, str], Summary | None],
    confidence: float,
    threshold: float,
) -> tuple[list[SweepRow], list[Note]]:
    """The geometric mean across the compared cells, per variant and metric, from the
    summaries already made (`across_sweep`: the cells of one reference share its runs)."""
    if len(across.compared) < 2:
        return [], []
    rows: list[SweepRow] = []
    notes: list[Note] = []
    for v in across.original.variants:
        for m in shown.metrics:
            row, found = across_sweep_row(
                shown, across.reference_of, by_sample, v, m, confidence, threshold
            )
            if row is not None:
                rows.append(row)
            notes += [Note(w, "", v, m.name) for w in found]
    return rows, notes


def _note(across: Across, n: Note) -> Note:
    """A note of the transformed comparison, placed in the experiment's cells and variants."""
    if n.cell_key not in across.origin:
        return n
    cell, variant = across.origin[n.cell_key]
    if n.variant == across.reference:
        cell = across.reference_of[cell]
    return Note(n.warning, cell, variant, n.metric)
