"""What a store holds, read for `perflab ls` and `perflab show`: the experiments with their
run counts (and why a stopped one stopped), one experiment whole — its runs, metric
definitions, values and environments — one run's artifacts, one artifact raw, and the
warnings its comparison raises."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.analysis.comparison_table import Note
    from perflab.records import ExperimentRow, MetricDef, RunRow
    from perflab.store import Database


@dataclass(frozen=True)
class Listing:
    """The store's experiments, oldest first, each with its runs counted by status, and
    why each ``stopped`` one stopped (a host unreachable…)."""

    experiments: list[tuple[ExperimentRow, dict[str, int]]]
    reasons: dict[int, str]


def list_experiments(store: Database) -> Listing:
    """Every experiment with its run counts, and why each that stopped stopped. One marked
    ``running`` whose runner is gone — perflab killed outright, or its store lost
    mid-run and the runner ended — is listed as stopped, saying so (the store is not
    changed: listing only reads)."""
    rows = []
    orphaned: dict[int, str] = {}
    for e, counts in store.experiments():
        if e.status == "running" and store.runner_alive(e.id) is False:
            e = dataclasses.replace(e, status="stopped")
            orphaned[e.id] = (
                f"its runner is gone (perflab killed, or its store lost mid-run): "
                f"`perflab run --resume {e.id}` finishes it"
            )
        rows.append((e, counts))
    reasons = {e.id: store.stop_reason(e.id) for e, _ in rows if e.status == "stopped"}
    reasons.update(orphaned)
    return Listing(rows, {k: v for k, v in reasons.items() if v})


@dataclass(frozen=True)
class Shown:
    """One experiment as stored: its row, runs (in run order), metric definitions,
    environments by host, and each run's values (run id → metric → value)."""

    experiment: ExperimentRow
    runs: list[RunRow]
    metric_defs: list[MetricDef]
    environments: dict[str, dict[str, Any]]
    values: dict[int, dict[str, float]]

    def run(self, number: int) -> RunRow:
        """Run ``number`` (1-based, execution order); InputError when there is none."""
        found = next((r for r in self.runs if r.order_index == number - 1), None)
        if found is None:
            raise InputError(
                f"experiment {self.experiment.id} has no run {number} (it has {len(self.runs)})"
            )
        return found


def show_experiment(store: Database, ref: str | int) -> Shown:
    e = store.experiment(ref)
    values: dict[int, dict[str, float]] = {}
    for rid, name, value in store.metrics(e.id):
        values.setdefault(rid, {})[name] = value
    return Shown(e, store.runs(e.id), store.metric_defs(e.id), store.environments(e.id), values)


def run_artifacts(store: Database, experiment_id: int, run: RunRow) -> dict[str, bytes]:
    """Every artifact a run kept, by name (`perflab.store.artifact_keys`)."""
    out: dict[str, bytes] = {}
    for name, _size in store.artifact_names(experiment_id, run.id):
        data = store.artifact(experiment_id, name, run.id)
        assert data is not None  # listed just above
        out[name] = data
    return out


def artifact(store: Database, experiment_id: int, name: str, run: RunRow | None) -> bytes:
    """One artifact raw, of a run or (``run`` None) of the experiment; InputError naming
    the ones there are when it has no such artifact."""
    run_id = run.id if run is not None else None
    data = store.artifact(experiment_id, name, run_id)
    if data is None:
        names = [n for n, _ in store.artifact_names(experiment_id, run_id)]
        raise InputError(
            f"no artifact '{name}'" + (f" (have: {', '.join(names)})" if names else "")
        )
    return data


def comparison_warnings(store: Database, experiment_id: int) -> list[Note]:
    """What `perflab compare ID --verbose` lists under its tables (the default options)."""
    from perflab.analysis.answer import answer
    from perflab.analysis.request import ComparisonRequest

    return answer(store, ComparisonRequest(experiment_id)).comparison.notes
