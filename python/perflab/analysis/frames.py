"""A store's contents as pandas DataFrames: the experiments (one row each) and an
experiment's runs as a tidy table (one row per run × metric).

pandas is imported when a table is built, not when this module is: ``import perflab``
and `perflab --help` stay light.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from perflab.store import ExperimentRow, MetricDef, RunRow

#: `Store.experiments()`'s columns, in order.
EXPERIMENT_COLUMNS = {
    "id": "int64",
    "name": "str",
    "status": "str",
    "source": "str",
    "started": "datetime64[ns, UTC]",
    "finished": "datetime64[ns, UTC]",
    "runs": "int64",
    "ok": "int64",
    "failed": "int64",
    "pending": "int64",
    "baseline": "str",
    "spec_path": "str",
    "description": "str",
}

#: The tidy runs table's columns before the matrix parameters, and after them.
RUN_COLUMNS_BEFORE = {"experiment": "int64", "run_id": "int64", "order": "int64"}
RUN_COLUMNS_AFTER = {
    "variant": "str",
    "repetition": "int64",
    "block": "int64",
    "warmup": "bool",
    "metric": "str",
    "value": "float64",
    "unit": "str",
    "better": "str",
    "status": "str",
    "host": "str",
}

#: A run that failed or timed out (``failed`` in `Store.experiments()`).
FAILED = ("failed", "timeout")
#: A run not finished yet (``pending`` in `Store.experiments()`).
UNFINISHED = ("pending", "running")


def frame(columns: dict[str, list[Any]], dtypes: dict[str, str]) -> pd.DataFrame:
    """A DataFrame of ``columns`` (name → values, in order), each of its dtype."""
    import pandas as pd

    return pd.DataFrame(
        {name: pd.Series(values, dtype=dtypes[name]) for name, values in columns.items()}
    )


def param_columns(params: Sequence[str], taken: Iterable[str]) -> dict[str, str]:
    """Matrix parameter → its column's name: the parameter's own name, or ``param:NAME``
    when that is one of the table's other columns (a parameter called ``metric``)."""
    fixed = set(taken)
    return {p: f"param:{p}" if p in fixed else p for p in params}


def experiments_frame(rows: list[tuple[ExperimentRow, dict[str, int]]]) -> pd.DataFrame:
    """One row per experiment, newest first (as `perflab ls` lists them): id, name,
    status, source (``run`` or ``import``), started and finished (UTC), runs in all, ok,
    failed (failed or timed out), pending (not run yet), baseline, spec_path, description."""
    cols: dict[str, list[Any]] = {name: [] for name in EXPERIMENT_COLUMNS}
    for e, counts in rows:
        cols["id"].append(e.id)
        cols["name"].append(e.name)
        cols["status"].append(e.status)
        cols["source"].append(e.source)
        cols["started"].append(_time(e.created_at))
        cols["finished"].append(_time(e.finished_at))
        cols["runs"].append(sum(counts.values()))
        cols["ok"].append(counts.get("ok", 0))
        cols["failed"].append(sum(counts.get(s, 0) for s in FAILED))
        cols["pending"].append(sum(counts.get(s, 0) for s in UNFINISHED))
        cols["baseline"].append(e.baseline)
        cols["spec_path"].append(e.spec_path)
        cols["description"].append(e.description)
    return frame(cols, EXPERIMENT_COLUMNS)


def _time(t: float | None) -> Any:
    import pandas as pd

    return pd.NaT if t is None else pd.Timestamp(t, unit="s", tz="UTC")


def runs_frame(
    experiment: ExperimentRow,
    defs: list[MetricDef],
    runs: list[RunRow],
    measured: Iterable[tuple[int, str, float]],
) -> pd.DataFrame:
    """The tidy table of an experiment's runs: one row per run × metric.

    Every run is there, in execution order, whatever its status: a failed, timed-out or
    pending run has NaN as the value of a metric it did not yield, and warm-up runs are
    marked (``warmup``), so that ``df[(df.status == "ok") & ~df.warmup]`` is exactly what
    a comparison uses. Metrics are in the experiment's order, then any other value a run
    stored (an overhead's ``NAME.gross`` and ``NAME.overhead``), by name.

    Columns: experiment (id), run_id (the store's), order (1-based execution order, as
    `perflab show --run N` counts), one column per matrix parameter (its label in that
    cell), variant, repetition, block, warmup, metric, value, unit, better, status, host.
    """
    values: dict[int, dict[str, float]] = {}
    for run_id, name, value in measured:
        values.setdefault(run_id, {})[name] = value
    known = {d.name: d for d in defs}
    extra = sorted({n for v in values.values() for n in v} - set(known))
    metrics = [(d.name, d.unit, d.better) for d in defs] + [(n, "", "") for n in extra]

    params = list(experiment.settings.get("params", []))
    for r in runs:  # imports, and stores older than the settings' parameter list
        params += [p for p in r.cell if p not in params]
    names = param_columns(params, [*RUN_COLUMNS_BEFORE, *RUN_COLUMNS_AFTER])
    dtypes = {**RUN_COLUMNS_BEFORE, **{names[p]: "str" for p in params}, **RUN_COLUMNS_AFTER}
    cols: dict[str, list[Any]] = {name: [] for name in dtypes}
    for r in runs:
        got = values.get(r.id, {})
        for name, unit, better in metrics:
            if name not in got and name not in known:
                continue  # another run's extra value: not a metric of this one
            cols["experiment"].append(experiment.id)
            cols["run_id"].append(r.id)
            cols["order"].append(r.order_index + 1)
            for p in params:
                cols[names[p]].append(r.cell.get(p))
            cols["variant"].append(r.variant)
            cols["repetition"].append(r.repetition)
            cols["block"].append(r.block)
            cols["warmup"].append(r.warmup)
            cols["metric"].append(name)
            cols["value"].append(got.get(name, math.nan))
            cols["unit"].append(unit)
            cols["better"].append(better)
            cols["status"].append(r.status)
            cols["host"].append(r.host)
    return frame(cols, dtypes)
