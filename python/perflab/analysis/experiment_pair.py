"""Two stored experiments compared with each other (`perflab compare A B`).

Semantics: experiment A is the baseline side, B the candidate side. Runs are matched
by matrix cell (its key, e.g. ``keys=~90%``), by variant and by metric name:

* by default each variant of B is compared with the variant of the same name in A
  ("yesterday's baseline vs today's baseline, yesterday's mglru vs today's mglru");
* ``pairs=[("old", "new")]`` pairs variant ``old`` of A with ``new`` of B instead (or
  selects variants: ``("mglru", "mglru")``).

The result is an ordinary `Dataset` whose two "variants" are the two experiments (named
``#A`` and ``#B``, with the experiments' names when those differ) and whose cells are A's
cells × the compared variant pairs (a ``variant`` column is added when more than one
pair is compared), so `compare_dataset` and every reporter work on it unchanged. Cells,
variants or metrics present on one side only are left out, with a note saying which. A
metric whose unit or better-direction differs between the two is an error: the numbers
would not mean the same thing.

Runs of two experiments are not paired in blocks, so the ``paired`` method is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from perflab.analysis.against_baseline import compare_dataset
from perflab.analysis.comparison_table import ComparisonTable, Note
from perflab.analysis.dataset import Dataset, load_dataset
from perflab.errors import InputError
from perflab.stats import DEFAULT_METHOD, StatWarning
from perflab.store import Database, ExperimentRow, MetricDef


@dataclass(frozen=True)
class RunOrigin:
    """Where a dataset's samples came from: stored runs of ``experiment_id`` whose
    (cell_key, variant) is a key of ``mapping`` belong to the dataset's (cell_key, variant)
    it maps to. ``label`` names the side in plots and tables (empty for a single experiment)."""

    experiment_id: int
    mapping: dict[tuple[str, str], tuple[str, str]]
    label: str = ""


def single_origin(data: Dataset) -> list[RunOrigin]:
    """The identity origin of an ordinary (one-experiment) dataset."""
    pairs = {
        (cell, variant): (cell, variant) for cell, _ in data.cells for variant in data.variants
    }
    return [RunOrigin(data.experiment.id, pairs)]


@dataclass(frozen=True)
class CrossDataset:
    dataset: Dataset
    a: ExperimentRow  # baseline side
    b: ExperimentRow  # candidate side
    pairs: list[tuple[str, str]]  # (variant of A, variant of B) compared
    origins: list[RunOrigin]
    notes: list[StatWarning] = field(default_factory=list)


def side_names(a: ExperimentRow, b: ExperimentRow) -> tuple[str, str]:
    if a.name == b.name:
        return f"#{a.id}", f"#{b.id}"
    return f"#{a.id} {a.name}", f"#{b.id} {b.name}"


def cross_dataset(
    store: Database, ref_a: str | int, ref_b: str | int, pairs: list[tuple[str, str]] | None = None
) -> CrossDataset:
    """Experiment ``ref_b`` against ``ref_a`` as the baseline, matched by cell, variant and
    metric (see the module docstring). InputError (one line) when a side has nothing to match."""
    da, db = load_dataset(store, ref_a), load_dataset(store, ref_b)
    a, b = da.experiment, db.experiment
    if a.id == b.id:
        raise InputError(
            f"both sides are experiment {a.id}: name two different experiments "
            "(e.g. `perflab compare 12 14`)"
        )
    pairs, notes = _match_variants(da, db, pairs)
    metrics, metric_notes = _match_metrics(da, db)
    cells, cell_notes = _match_cells(da, db)
    notes += metric_notes + cell_notes + _run_notes(da) + _run_notes(db)
    names = side_names(a, b)
    merged = _merge(da, db, cells, pairs, metrics, names)
    data = Dataset(
        _cross_row(a, b, pairs, merged, names),
        metrics,
        merged.params,
        merged.cells,
        list(names),
        merged.samples,
        merged.blocks,
        {},
        [],
        merged.values,
    )
    origins = [RunOrigin(a.id, merged.map_a, names[0]), RunOrigin(b.id, merged.map_b, names[1])]
    return CrossDataset(data, a, b, list(pairs), origins, notes)


def _match_variants(
    da: Dataset, db: Dataset, pairs: list[tuple[str, str]] | None
) -> tuple[list[tuple[str, str]], list[StatWarning]]:
    """The (variant of A, variant of B) pairs to compare: ``pairs``, checked, else the names
    both have (in B's order), with a note naming the variants left out; two experiments of
    one variant each pair those."""
    a, b = da.experiment, db.experiment
    if pairs:
        for va, vb in pairs:
            if va not in da.variants:
                raise InputError(
                    f"experiment {a.id} has no variant '{va}' (it has: {', '.join(da.variants)})"
                )
            if vb not in db.variants:
                raise InputError(
                    f"experiment {b.id} has no variant '{vb}' (it has: {', '.join(db.variants)})"
                )
        return pairs, []
    pairs = [(v, v) for v in db.variants if v in da.variants]
    if not pairs and len(da.variants) == len(db.variants) == 1:
        # two measurements of one variant each (two nights of one CI job): their only
        # variants are the pair, whatever each was named after (its file, say)
        return [(da.variants[0], db.variants[0])], []
    if not pairs:
        raise InputError(
            f"experiments {a.id} and {b.id} have no variant name in common "
            f"({', '.join(da.variants)} vs {', '.join(db.variants)}); pair them with "
            "--variant A_NAME=B_NAME"
        )
    only = [f"{v} (#{a.id})" for v in da.variants if v not in db.variants] + [
        f"{v} (#{b.id})" for v in db.variants if v not in da.variants
    ]
    if not only:
        return pairs, []
    note = StatWarning(
        "unmatched_variants",
        f"variants on one side only, left out: "
        f"{', '.join(only)}; pair them with --variant A_NAME=B_NAME",
        {"variants": ", ".join(only)},
    )
    return pairs, [note]


def _match_metrics(da: Dataset, db: Dataset) -> tuple[list[MetricDef], list[StatWarning]]:
    """The metrics both have, by name in B's order (unit and direction must agree), with a
    note naming those left out."""
    a, b = da.experiment, db.experiment
    metrics_a = {m.name: m for m in da.metrics}
    metrics = []
    for m in db.metrics:
        ma = metrics_a.get(m.name)
        if ma is None:
            continue
        if (ma.unit, ma.better) != (m.unit, m.better):
            raise InputError(
                f"metric '{m.name}' differs: '{ma.unit}', {ma.better} is better in experiment "
                f"{a.id} but '{m.unit}', {m.better} is better in {b.id}"
            )
        metrics.append(m)
    if not metrics:
        raise InputError(f"experiments {a.id} and {b.id} have no metric name in common")
    only_m = sorted({m.name for m in da.metrics} ^ {m.name for m in db.metrics})
    if not only_m:
        return metrics, []
    note = StatWarning(
        "unmatched_metrics",
        f"metrics on one side only, left out: {', '.join(only_m)}",
        {"metrics": ", ".join(only_m)},
    )
    return metrics, [note]


def _match_cells(
    da: Dataset, db: Dataset
) -> tuple[list[tuple[str, dict[str, str]]], list[StatWarning]]:
    """The matrix cells both have, by key in B's order, with a note naming those left out."""
    a, b = da.experiment, db.experiment
    cells_a = {k for k, _ in da.cells}
    cells = [(k, labels) for k, labels in db.cells if k in cells_a]
    if not cells:
        raise InputError(
            f"experiments {a.id} and {b.id} have no matrix cell in common "
            f"({', '.join(k for k, _ in da.cells)} vs {', '.join(k for k, _ in db.cells)})"
        )
    only_c = [k for k, _ in da.cells if k not in {c for c, _ in cells}] + [
        k for k, _ in db.cells if k not in cells_a
    ]
    if not only_c:
        return cells, []
    note = StatWarning(
        "unmatched_cells",
        f"matrix cells on one side only, left out: {', '.join(only_c)}",
        {"cells": ", ".join(only_c)},
    )
    return cells, [note]


def _run_notes(d: Dataset) -> list[StatWarning]:
    """Notes on one side's runs: failed ones (left out), and runs not done yet."""
    e = d.experiment
    notes = []
    if d.failed:
        notes.append(
            StatWarning(
                "failed_runs",
                f"{len(d.failed)} run(s) of experiment {e.id} failed or timed "
                f"out and are left out; see `perflab show {e.id} --runs` for their reasons",
                {"count": len(d.failed), "experiment": e.id},
            )
        )
    pending = d.status_counts.get("pending", 0) + d.status_counts.get("running", 0)
    if pending:
        notes.append(
            StatWarning(
                "incomplete",
                f"experiment {e.id} is incomplete: {pending} run(s) not done "
                f"yet; resume with `perflab run --resume {e.id}`",
                {"pending": pending, "experiment": e.id},
            )
        )
    return notes


@dataclass(frozen=True)
class _Merged:
    """The cross dataset's matrix (B's parameters, plus a variant column when more than one
    pair is compared), its two sides' samples, and where they came from."""

    params: list[str]
    cells: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    samples: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    blocks: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    map_a: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    map_b: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)


def _merge(
    da: Dataset,
    db: Dataset,
    cells: list[tuple[str, dict[str, str]]],
    pairs: list[tuple[str, str]],
    metrics: list[MetricDef],
    names: tuple[str, str],
) -> _Merged:
    """A's and B's samples as the two variants (``names``) of one dataset: one cell per
    matched cell × compared variant pair."""
    name_a, name_b = names
    many = len(pairs) > 1
    params = list(db.params)
    vparam = "variant" if "variant" not in params else "variant_"
    if many:
        params.append(vparam)
    out = _Merged(params)
    for cell_key, labels in cells:
        for va, vb in pairs:
            vlabel = va if va == vb else f"{va}→{vb}"
            if many:
                key = f"{vparam}={vlabel}" if cell_key == "-" else f"{cell_key},{vparam}={vlabel}"
                new_labels = {**labels, vparam: vlabel}
            else:
                key, new_labels = cell_key, dict(labels)
            out.cells.append((key, new_labels))
            out.values[key] = {**db.values.get(cell_key, {}), **da.values.get(cell_key, {})}
            out.map_a[(cell_key, va)] = (key, name_a)
            out.map_b[(cell_key, vb)] = (key, name_b)
            for m in metrics:
                for side, d, v in ((name_a, da, va), (name_b, db, vb)):
                    out.samples[(key, side, m.name)] = list(d.sample(cell_key, v, m.name))
                    out.blocks[(key, side, m.name)] = list(d.blocks.get((cell_key, v, m.name), []))
    return out


def _cross_row(
    a: ExperimentRow,
    b: ExperimentRow,
    pairs: list[tuple[str, str]],
    merged: _Merged,
    names: tuple[str, str],
) -> ExperimentRow:
    """The experiment row of the cross dataset: B's, renamed, with the merged matrix and the
    two sides as its variants (A's the baseline)."""
    name_a, name_b = names
    pair_text = ", ".join(va if va == vb else f"{va}→{vb}" for va, vb in pairs)
    settings = {
        "params": merged.params,
        "cells": [{"key": k, "labels": lab} for k, lab in merged.cells],
        "variants": [
            {"name": name_a, "description": f"experiment {a.id} ({a.name}), the baseline side"},
            {"name": name_b, "description": f"experiment {b.id} ({b.name})"},
        ],
        "confidence": b.settings.get("confidence", 0.95),
        "cross": {
            "baseline_experiment": a.id,
            "candidate_experiment": b.id,
            "pairs": [list(p) for p in pairs],
        },
    }
    return ExperimentRow(
        id=b.id,
        name=f"{b.name} #{b.id} vs {a.name} #{a.id}",
        description=f"experiment {b.id} against experiment {a.id} as the baseline; variants compared: {pair_text}",
        source="cross",
        spec_path=None,
        spec_text=None,
        spec_sha256=None,
        baseline=name_a,
        settings=settings,
        status="complete" if a.status == b.status == "complete" else "incomplete",
        created_at=b.created_at,
        finished_at=b.finished_at,
        runner_pid=None,
        runner_host=None,
    )


def compare_cross(
    cross: CrossDataset, *, method: str = DEFAULT_METHOD, **options: Any
) -> ComparisonTable:
    """`compare_dataset` of a cross dataset (same options), with the notes about what was left out."""
    if method == "paired":
        raise InputError(
            "the paired method needs runs interleaved in blocks of one experiment; "
            "two experiments' runs are not paired (use welch, bootstrap or mannwhitney)"
        )
    result = compare_dataset(cross.dataset, method=method, **options)
    return dataclasses.replace(result, notes=[Note(w) for w in cross.notes] + list(result.notes))
