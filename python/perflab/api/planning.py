"""An experiment file before it runs (`perflab run --dry-run`): loaded and checked, its
plan run by run, how its hosts will be measured (each is connected to), and how long it
should take, from the earlier runs of the same spec in the store. Runs nothing, writes
nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflab.analysis.plan_estimate import DurationEstimate
    from perflab.plan import PlannedRun
    from perflab.spec import Spec


@dataclass(frozen=True)
class PlanPreview:
    """The plan of a spec: its runs in order, the boots it needs per host, the number of
    matrix cells, and the estimated duration (None: no earlier runs in ``store``)."""

    plan: list[PlannedRun]
    boots: dict[str, int]
    cells: int
    store: str
    estimate: DurationEstimate | None


def preview(spec: Spec, store: str | None) -> PlanPreview:
    from perflab.analysis.plan_estimate import estimate_from_path
    from perflab.plan import boots, make_plan
    from perflab.spec.matrix import expand_matrix
    from perflab.store.location import store_location

    plan = make_plan(spec.model)
    where = store_location(store)  # ``--store``, else $PERFLAB_STORE, else ./perflab.db
    return PlanPreview(
        plan,
        boots(spec.model, plan),
        len(expand_matrix(spec.model.matrix)),
        str(where),  # for people: a URL without its password
        estimate_from_path(where, spec, plan),
    )


def host_lines(spec: Spec) -> list[str]:
    """How each host's steps will run: each is connected to, and one that cannot run a
    step is refused here as at the run's start (HostError)."""
    from perflab.execution.experiment_hosts import Hosts

    if not spec.model.hosts:
        return []
    hosts = Hosts(specs=spec.model.hosts, workdir=spec.workdir)
    try:
        return list(hosts.check())
    finally:
        hosts.close()
