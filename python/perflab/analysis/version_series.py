"""A metric across a series of versions (`perflab history`): each version's runs
summarised with their interval, and the change points between versions.

A series is one metric at one matrix cell for one variant, over the versions (`version_order.py`:
the experiments grouped by the version they measured, in natural order). Each version's
point is `perflab.stats.summary.summarize` of every measured run of its experiments (the
mean with its Student-t interval, as `perflab compare`'s summaries). The change points
are `perflab.stats.changepoints.detect_changes` over the versions that have runs, fed
every run of each (not one number per version), for the metric's better direction.

Nothing here reads a store: `perflab.api.history` loads the experiments' datasets and
hands them over.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from perflab.analysis.dataset import Dataset
from perflab.analysis.version_order import Version, order_versions
from perflab.errors import InputError
from perflab.records import ExperimentRow, MetricDef
from perflab.stats.arrays import FloatArray
from perflab.stats.changepoints import ChangePoint, ChangePoints, detect_changes
from perflab.stats.summary import MIN_RUNS_FOR_INTERVAL, Summary, summarize
from perflab.stats.warnings import StatWarning

#: The level of each version's interval, and of the change points', by default: a series
#: offers the change-point search many places to find a change by chance (docs/statistics.md).
CONFIDENCE = 0.95
CHANGE_CONFIDENCE = 0.99
#: The change points' guard (a fraction): a change is reported only beyond ±0.5%.
MIN_EFFECT = 0.005

_T = TypeVar("_T")


@dataclass(frozen=True)
class Change:
    """A change point of a series, between two of its versions.

    before/after: the labels of the last version at the old level and the first at the new
    one (adjacent among the versions that have runs of the series); ``point``: the
    detector's `ChangePoint` (the change's estimate, interval, p-values, verdict; its
    ``index`` counts the series' own versions, `Series.present`)."""

    before: str
    after: str
    point: ChangePoint


@dataclass(frozen=True)
class Series:
    """One metric at one cell for one variant, over the versions of the `History`.

    points:   per version of `History.versions`, the summary of its runs (in the metric's
              unit; n ≥ 1), or None when that version has no run of this series.
    present:  the indices (into `History.versions`) of the versions that have runs: the
              series the change points were sought in.
    changes:  the change points found (`ChangePoints`; its indices count ``present``).
    found:    the change points placed between versions (`Change`), in series order.
    """

    metric: MetricDef
    cell_key: str
    labels: dict[str, str]
    variant: str
    points: tuple[Summary | None, ...]
    present: tuple[int, ...]
    changes: ChangePoints
    found: tuple[Change, ...]


@dataclass(frozen=True)
class History:
    """A series of versions and every series measured over them.

    name:              what the series is of: the experiments' name.
    versions:          the versions in series order (`versions.Version`).
    params:            the matrix parameters of the cells.
    series:            per metric × cell × variant (metrics in their order, then cells,
                       then variants).
    confidence:        level of each version's interval, in (0, 1).
    change_confidence: level of the change points' search and intervals, in (0, 1).
    min_effect:        the change points' guard, a fraction ≥ 0.
    warnings:          what was assumed or left out, each saying what to do.
    """

    name: str
    versions: tuple[Version, ...]
    params: tuple[str, ...]
    series: tuple[Series, ...]
    confidence: float
    change_confidence: float
    min_effect: float
    warnings: tuple[StatWarning, ...] = field(default=())

    @property
    def metrics(self) -> list[MetricDef]:
        return list({s.metric.name: s.metric for s in self.series}.values())


@dataclass(frozen=True)
class Selection:
    """Which series to make: only these metrics, this cell key, this variant (empty or
    None: every one)."""

    metrics: tuple[str, ...] = ()
    cell: str | None = None
    variant: str | None = None


def build_history(
    name: str,
    data: Sequence[Dataset],
    selection: Selection | None = None,
    *,
    confidence: float = CONFIDENCE,
    change_confidence: float = CHANGE_CONFIDENCE,
    min_effect: float = MIN_EFFECT,
    seed: int = 0,
) -> History:
    """The history of the experiments ``data`` (each experiment's dataset): versions in
    order, a series per metric × cell × variant chosen by ``selection`` (InputError, one
    line, for a metric, cell or variant none of them has)."""
    selection = selection or Selection()
    warnings: list[StatWarning] = []
    has_runs = [any(d.measured(k) for k in d.samples) for d in data]
    measured = [d for d, ok in zip(data, has_runs) if ok]
    empty = [d.experiment for d, ok in zip(data, has_runs) if not ok]
    if empty:
        warnings.append(_left_out(empty))
    if not measured:
        raise InputError(f"no measured run in the experiments of {name}: nothing to show")
    versions, notes = order_versions([d.experiment for d in measured])
    warnings += notes
    by_id = {d.experiment.id: d for d in measured}
    groups = [[by_id[i] for i in v.experiments] for v in versions]
    metrics = _metrics(measured, selection.metrics, name)
    cells = _choose(_cells(measured), selection.cell, "cell", name, lambda c: c[0])
    variants = _choose(_variants(measured), selection.variant, "variant", name, lambda v: v)
    levels = _Levels(confidence, change_confidence, min_effect, seed)
    made = (
        _series(m, c, v, versions, groups, levels) for m in metrics for c in cells for v in variants
    )
    kept = [s for s in made if s is not None]
    warnings += _few_runs(kept, versions)
    params = tuple(dict.fromkeys(p for d in measured for p in d.params))
    return History(
        name,
        tuple(versions),
        params,
        tuple(kept),
        confidence,
        change_confidence,
        min_effect,
        tuple(warnings),
    )


@dataclass(frozen=True)
class _Levels:
    confidence: float
    change_confidence: float
    min_effect: float
    seed: int


def _series(
    metric: MetricDef,
    cell: tuple[str, dict[str, str]],
    variant: str,
    versions: list[Version],
    groups: list[list[Dataset]],
    levels: _Levels,
) -> Series | None:
    """One series: each version's runs pooled and summarised, and its change points; None
    when no version has a run of it."""
    key = (cell[0], variant, metric.name)
    runs: list[FloatArray | None] = []
    for group in groups:
        parts = [np.asarray(d.arrays[key], dtype=np.float64) for d in group if d.measured(key)]
        runs.append(np.concatenate(parts) if parts else None)
    present = tuple(i for i, r in enumerate(runs) if r is not None)
    if not present:
        return None
    points = tuple(summarize(r, levels.confidence) if r is not None else None for r in runs)
    alpha = 1 - levels.change_confidence
    changes = detect_changes(
        [r for r in runs if r is not None],
        metric.better,
        confidence=levels.change_confidence,
        min_effect=levels.min_effect,
        permutations=max(999, math.ceil(round(1 / alpha, 9)) - 1),
        seed=levels.seed,
    )
    found = tuple(
        Change(versions[present[p.index - 1]].label, versions[present[p.index]].label, p)
        for p in changes.points
    )
    return Series(metric, cell[0], cell[1], variant, points, present, changes, found)


def _metrics(data: list[Dataset], wanted: Sequence[str], name: str) -> list[MetricDef]:
    """The metrics of the series (the newest experiment's definitions; its order, then
    metrics only older ones have), checked to mean the same in every experiment."""
    defs: dict[str, MetricDef] = {}
    for d in reversed(data):
        for m in d.metrics:
            have = defs.get(m.name)
            if have is None:
                defs[m.name] = m
                continue
            if have.better != m.better or (have.unit and m.unit and have.unit != m.unit):
                raise InputError(
                    f"metric {m.name} is {_how(m)} in experiment {d.experiment.id} but "
                    f"{_how(have)} in a later one: the numbers do not mean the same thing "
                    "(choose the experiments with --experiments)"
                )
            if not have.unit and m.unit:
                defs[m.name] = MetricDef(m.name, m.unit, have.better)
    for w in wanted:
        if w not in defs:
            raise InputError(
                f"no metric '{w}' in the experiments of {name} (metrics: {_list(defs)})"
            )
    return [defs[w] for w in dict.fromkeys(wanted)] if wanted else list(defs.values())


def _how(m: MetricDef) -> str:
    return f"'{m.unit}', {m.better} is better" if m.unit else f"{m.better} is better"


def _cells(data: list[Dataset]) -> list[tuple[str, dict[str, str]]]:
    out: dict[str, dict[str, str]] = {}
    for d in data:
        for key, labels in d.cells:
            out.setdefault(key, labels)
    return list(out.items())


def _variants(data: list[Dataset]) -> list[str]:
    return list(dict.fromkeys(v for d in data for v in d.variants))


def _choose(
    items: list[_T], wanted: str | None, what: str, name: str, key: Callable[[_T], str]
) -> list[_T]:
    """``items`` whose key is ``wanted`` (all when None); InputError naming them otherwise."""
    if wanted is None:
        return items
    keyed = {key(i): i for i in items}
    if wanted not in keyed:
        raise InputError(
            f"no {what} '{wanted}' in the experiments of {name} ({what}s: {_list(keyed)})"
        )
    return [keyed[wanted]]


def _list(names: Iterable[str]) -> str:
    items = list(names)
    return ", ".join(items[:20]) + (f", … ({len(items)} in all)" if len(items) > 20 else "")


def _left_out(rows: list[ExperimentRow]) -> StatWarning:
    ids = tuple(e.id for e in rows)
    return StatWarning(
        "no_runs",
        f"experiment{'s' if len(ids) > 1 else ''} {', '.join(f'#{i}' for i in ids)} "
        "measured nothing (no successful run): left out (see perflab show ID --runs)",
        {"experiments": ids},
    )


def _few_runs(series: list[Series], versions: list[Version]) -> list[StatWarning]:
    """One warning for the versions with too few runs for a trustworthy interval."""
    few = sorted(
        {i for s in series for i in s.present if (p := s.points[i]) and p.n < MIN_RUNS_FOR_INTERVAL}
    )
    if not few:
        return []
    labels = [versions[i].label for i in few]
    shown = ", ".join(labels[:8]) + (f" and {len(labels) - 8} more" if len(labels) > 8 else "")
    return [
        StatWarning(
            "too_few_runs",
            f"{shown}: fewer than {MIN_RUNS_FOR_INTERVAL} runs of some series, so their "
            f"intervals are wide or missing (run ≥ {MIN_RUNS_FOR_INTERVAL} repetitions)",
            {"versions": tuple(few)},
        )
    ]
