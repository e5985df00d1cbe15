"""How long a plan will take, from earlier runs of the same spec in a store (`perflab run
--dry-run`).

Earlier experiments are those run (not imported) from exactly this spec text (its SHA-256);
when there are none, those of the same experiment name. From their runs that ended ok:

* each variant's median run time (``ended_at - started_at``), times the variant's planned
  runs — a variant none of them ran gets the median over every variant's runs;
* the median pause between one run's end and the next run's start (services of a variant
  started, the observer, the store's commit), times the planned runs less one;
* the median time from an experiment's creation to its first run's start (environment
  capture, ``before_all``, services of scope "experiment") and from its last run's end to
  its end (``after_all``).

The store is only read (`Database(write=False)`): a missing store is no estimate, never a new
file.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import StoreMissingError
from perflab.plan import PlannedRun
from perflab.spec import Spec
from perflab.store import Database, ExperimentRow, RunRow
from perflab.store.location import StoreURL, store_location


@dataclass(frozen=True)
class VariantTime:
    """One variant's median run time and how many runs it is planned for."""

    variant: str
    median_seconds: float
    planned: int
    measured_runs: int  # earlier runs the median is taken over (0: the all-variant fallback)


@dataclass(frozen=True)
class DurationEstimate:
    matched_by: str  # "spec text" (same SHA-256) or "name"
    experiments: tuple[int, ...]  # the earlier experiments read, oldest first
    variants: tuple[VariantTime, ...]
    between_runs_seconds: float  # median pause between consecutive runs
    start_seconds: float  # median from an experiment's creation to its first run
    end_seconds: float  # median from the last run's end to the experiment's end
    planned_runs: int
    max_runs: int | None = None  # adaptive repetitions: the runs of the most blocks allowed
    max_runs_seconds: float | None = None  # their run time (medians × runs)

    @property
    def runs_seconds(self) -> float:
        """The planned runs' own time: Σ variant median × its planned runs."""
        return sum(v.median_seconds * v.planned for v in self.variants)

    @property
    def overhead_seconds(self) -> float:
        return (
            self.between_runs_seconds * max(0, self.planned_runs - 1)
            + self.start_seconds
            + self.end_seconds
        )

    @property
    def total_seconds(self) -> float:
        return self.runs_seconds + self.overhead_seconds

    @property
    def max_total_seconds(self) -> float | None:
        """Adaptive repetitions: the estimate if every block allowed runs."""
        if self.max_runs is None or self.max_runs_seconds is None:
            return None
        return (
            self.max_runs_seconds
            + self.between_runs_seconds * max(0, self.max_runs - 1)
            + self.start_seconds
            + self.end_seconds
        )


def estimate_from_path(
    path: str | Path | StoreURL, spec: Spec, plan: Sequence[PlannedRun]
) -> DurationEstimate | None:
    """`estimate_duration` over the store at ``path`` (a file or a PostgreSQL URL); None
    when there is no store file there."""
    where = store_location(path)
    if isinstance(where, Path) and not where.exists():
        return None  # reading must not create one
    try:
        with Database(where, write=False) as store:
            return estimate_duration(store, spec, plan)
    except StoreMissingError:  # a team's new database: no earlier runs yet
        return None


def earlier_experiments(store: Database, spec: Spec) -> tuple[str, list[ExperimentRow]]:
    """(how they matched, the experiments run from this spec's text, else of its name), oldest first."""
    ran = [e for e, _ in store.experiments() if e.source == "run"]
    same_text = [e for e in ran if e.spec_sha256 == spec.sha256]
    if same_text:
        return "spec text", sorted(same_text, key=lambda e: e.id)
    return "name", sorted((e for e in ran if e.name == spec.model.name), key=lambda e: e.id)


def estimate_duration(
    store: Database, spec: Spec, plan: Sequence[PlannedRun]
) -> DurationEstimate | None:
    """The plan's expected duration from earlier runs of this spec; None when the store
    holds no finished run of it."""
    matched_by, experiments = earlier_experiments(store, spec)
    runs = {e.id: [r for r in store.runs(e.id) if _timed(r)] for e in experiments}
    ok = [r for rs in runs.values() for r in rs if r.status == "ok"]
    if not ok:
        return None
    every = statistics.median(_seconds(r) for r in ok)
    planned: dict[str, int] = {}
    for p in plan:
        planned[p.variant] = planned.get(p.variant, 0) + 1
    variants = []
    for v in spec.model.variant:
        own = [_seconds(r) for r in ok if r.variant == v.name]
        median = statistics.median(own) if own else every
        variants.append(VariantTime(v.name, median, planned.get(v.name, 0), len(own)))
    gaps, starts, ends = [], [], []
    for e in experiments:
        timed = sorted(runs[e.id], key=_start)
        if not timed:
            continue
        gaps += [max(0.0, _start(b) - _end(a)) for a, b in itertools.pairwise(timed)]
        starts.append(max(0.0, _start(timed[0]) - e.created_at))
        if e.status == "complete" and e.finished_at is not None:
            ends.append(max(0.0, e.finished_at - max(_end(r) for r in timed)))
    max_runs, max_seconds = _adaptive_most(spec, variants)
    return DurationEstimate(
        matched_by,
        tuple(e.id for e in experiments if runs[e.id]),
        tuple(variants),
        _median(gaps),
        _median(starts),
        _median(ends),
        len(plan),
        max_runs,
        max_seconds,
    )


def _adaptive_most(spec: Spec, variants: list[VariantTime]) -> tuple[int | None, float | None]:
    """Adaptive repetitions: (runs, their seconds) if every allowed block ran."""
    m = spec.model
    if m.adaptive is None:
        return None, None
    from perflab.spec.matrix import expand_matrix

    per_variant = len(expand_matrix(m.matrix)) * (m.warmup + m.adaptive.max)
    return per_variant * len(variants), sum(v.median_seconds * per_variant for v in variants)


def _timed(r: RunRow) -> bool:
    return (
        r.status in ("ok", "failed", "timeout")
        and r.started_at is not None
        and (r.ended_at is not None)
    )


def _start(r: RunRow) -> float:
    assert r.started_at is not None  # _timed
    return r.started_at


def _end(r: RunRow) -> float:
    assert r.ended_at is not None  # _timed
    return r.ended_at


def _seconds(r: RunRow) -> float:
    return max(0.0, _end(r) - _start(r))


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0
