"""Creating an experiment in the store from a spec, or finding the one to resume."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.plan import PlannedRun, make_plan
from perflab.records import Position
from perflab.spec import Spec, parse_spec
from perflab.spec.matrix import expand_matrix
from perflab.store import Database, ExperimentRow, MetricDef, NewRun


@dataclass(frozen=True)
class OpenedExperiment:
    id: int
    spec: Spec
    resumed: bool


def settings_of(spec: Spec) -> dict[str, Any]:
    """What analysis needs to know about the design, stored with the experiment."""
    m = spec.model
    return {
        "params": list(m.matrix),
        "cells": [
            {"key": c.key, "labels": c.labels, "values": c.values} for c in expand_matrix(m.matrix)
        ],
        "variants": [{"name": v.name, "description": v.description} for v in m.variant],
        "repetitions": m.adaptive.model_dump() if m.adaptive else m.repetitions,
        "warmup": m.warmup,
        "order": m.order,
        "seed": m.seed,
        "confidence": m.confidence,
        "on_failure": m.on_failure,
        "unmeasured_phases": [p.name for p in m.phase if not p.measure],
        "overheads": {
            x.name: (
                {"command": x.overhead} if x.overhead is not None else {"phase": x.overhead_phase}
            )
            for x in m.metric
            if x.overhead is not None or x.overhead_phase is not None
        },
    }


def planned_rows(plan: list[PlannedRun]) -> list[NewRun]:
    return [
        NewRun(
            order_index=r.order_index,
            block=r.block,
            cell_key=r.cell.key,
            cell=r.cell.labels,
            variant=r.variant,
            repetition=r.repetition,
            warmup=r.warmup,
        )
        for r in plan
    ]


def create_experiment(store: Database, spec: Spec, position: Position | None = None) -> int:
    """A new experiment of ``spec`` in ``store``, its runs planned; ``position``: its
    version and source (`perflab.execution.position.resolve_position`)."""
    m = spec.model
    return store.create_experiment(
        name=m.name,
        description=m.description,
        source="run",
        baseline=m.baseline,
        metrics=[MetricDef(x.name, x.unit, x.better) for x in m.metric],
        settings=settings_of(spec),
        runs=planned_rows(make_plan(m)),
        spec_path=str(spec.path.resolve()) if spec.path else None,
        spec_text=spec.text,
        spec_sha256=spec.sha256,
        position=position,
    )


def open_experiment(
    store: Database,
    spec: Spec | None = None,
    *,
    resume: str | None = None,
    new: bool = False,
    position: Position | None = None,
) -> OpenedExperiment:
    """The experiment to execute: ``resume`` names one; otherwise an unfinished
    experiment of the same spec text (and the same ``position``: version and source) is
    continued unless ``new``; else a new one."""
    if resume is not None:
        row = store.experiment(resume)
        return OpenedExperiment(row.id, spec_from_store(row), True)
    assert spec is not None
    if not new:
        unfinished = store.resumable(spec.sha256)
        if unfinished is not None and unfinished.position == (position or Position()):
            return OpenedExperiment(unfinished.id, spec, True)
    _replace_unstarted(store, spec)
    return OpenedExperiment(create_experiment(store, spec, position), spec, False)


def _replace_unstarted(store: Database, spec: Spec) -> None:
    """Experiments of this spec's name, run from a spec file, stopped before any run
    started (a misspelt labgrid place, a wrong host address): the corrected spec's new
    experiment takes their place, so that a mistake leaves no empty experiment behind."""
    from perflab.store.discard import discard_unstarted

    for e, counts in store.experiments():
        stopped = e.name == spec.model.name and e.source == "run" and e.status == "stopped"
        if stopped and set(counts) <= {"pending"}:
            discard_unstarted(store, e.id)


def spec_from_store(row: ExperimentRow) -> Spec:
    """The spec exactly as it was when the experiment started (not the file as it is now)."""
    if row.source != "run" or not row.spec_text:
        raise PerflabError(
            f"experiment {row.id} ('{row.name}') was imported, not run: nothing to resume"
        )
    if row.status == "complete":
        raise PerflabError(
            f"experiment {row.id} ('{row.name}') is already complete",
            hint="`perflab compare` it, or run its spec with --new",
        )
    path = Path(row.spec_path) if row.spec_path else None
    return parse_spec(row.spec_text, path)
