"""Results made elsewhere brought into a store (`perflab import`): per-run rows of a CSV
file, or the result files of a benchmark tool (Go's benchfmt, Google Benchmark,
pytest-benchmark, hyperfine, criterion). Every file is read and checked whole first: bad
input is one line naming where, and creates or writes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.csv_import import CsvRuns
    from perflab.records import Position


@dataclass(frozen=True)
class Imported:
    """The new experiment: its id, how many runs it holds, and the store it is in."""

    experiment_id: int
    runs: int
    store: str
    #: what the import fell back to (a tool's summaries instead of its runs), to be said
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def import_csv(
    path: str,
    *,
    store: str | None,
    variant: str,
    params: Sequence[str],
    metrics: Sequence[str],
    baseline: str,
    name: str | None = None,
    description: str = "",
    version: str | None = None,
    commit: str | None = None,
    repo: str | None = None,
) -> Imported:
    """A CSV of one row per run: ``variant`` names its column, ``params`` the matrix
    parameters' columns, ``metrics`` the metric columns as ``name:better[:unit]``;
    ``version``, ``commit``, ``repo``: its place in a series (`position`)."""
    from perflab.csv_import import MetricColumn, read_runs_csv

    at = position(version, commit, repo)
    columns = [MetricColumn.parse(m) for m in metrics]
    parsed = read_runs_csv(
        path, variant_col=variant, param_cols=list(params), metrics=columns, baseline=baseline
    )
    return _stored(
        store,
        parsed,
        param_cols=list(params),
        metrics=columns,
        baseline=baseline,
        name=name,
        description=description,
        position=at,
    )


def position(version: str | None, commit: str | None, repo: str | None) -> Position:
    """An import's place in a series: the version measured, the commit and repository it
    was built from; ``repo`` alone (a git work tree) gives its HEAD commit
    (``git -C REPO rev-parse HEAD``). Checked before any file is read."""
    from perflab.execution.position import import_position

    return import_position(version, commit, repo)


def import_results(
    fmt: str,
    files: Sequence[str],
    *,
    store: str | None,
    variant_from: str | None = None,
    baseline: str | None = None,
    name: str | None = None,
    description: str | None = None,
    version: str | None = None,
    commit: str | None = None,
    repo: str | None = None,
) -> Imported:
    """A benchmark tool's result files (``fmt``: a name of `perflab.importers.FORMATS`),
    one variant per file unless ``variant_from`` names the key that tells them apart;
    ``version``, ``commit``, ``repo``: its place in a series (`position`)."""
    from perflab.csv_import import CsvRuns, MetricColumn
    from perflab.importers import read_results

    at = position(version, commit, repo)
    tool = read_results(fmt, list(files), variant_from=variant_from, baseline=baseline)
    done = _stored(
        store,
        CsvRuns(tool.path, tool.variants, tool.cells, tool.runs),
        param_cols=tool.params,
        metrics=[MetricColumn(m.name, m.better, m.unit) for m in tool.metrics],
        baseline=tool.baseline,
        name=name or tool.name,
        description=description or tool.description,
        extra_settings=tool.settings,
        position=at,
    )
    return dataclasses.replace(done, notes=tool.notes, warnings=tool.warnings)


def _stored(store: str | None, runs: CsvRuns, **options: Any) -> Imported:
    """``runs`` stored as one new experiment (`perflab.csv_import.store_runs`, the one
    writer of imported experiments), the store made if missing."""
    from perflab.csv_import import store_runs
    from perflab.store import Database

    with Database(store, write=True) as db:
        eid = store_runs(db, runs, **options)
        return Imported(eid, len(db.runs(eid)), str(db.path))
