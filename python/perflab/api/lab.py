"""`perflab.open(path)`: a store as Python objects — its experiments and an experiment's
runs as pandas DataFrames, comparisons as typed results — and `Experiment`, one
experiment of it.

Every call opens the store read-only for as long as it reads (the CLI's reading commands do
the same): nothing is created or changed, nothing stays open between calls, and an
experiment still running is read as it is at that moment.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from perflab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from perflab.analysis.answer import Answer
    from perflab.analysis.request import CompareKwargs
    from perflab.analysis.version_series import History
    from perflab.store import Database, ExperimentRow

#: An experiment: its id, its name (the latest of that name) or ``"last"``.
Ref = str | int
#: The columns of `Store.profile_movers` (`perflab.observe.movers.Mover`).
MOVER_COLUMNS = [
    "phase",
    "cell",
    "candidate",
    "function",
    "kind",
    "baseline_share",
    "candidate_share",
    "change",
    "low",
    "high",
    "p_value",
    "significant",
    "n_baseline",
    "n_candidate",
]


class Store:
    """The results store at ``path`` (default: ``$PERFLAB_STORE``, else ``./perflab.db``).

    Opening checks that it is there and is a perflab store (`perflab.errors.StoreError`,
    one line, otherwise).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        from perflab.store.location import store_location

        self.path = store_location(path)  # a file, or a URL (printed without its password)
        with self._read():
            pass

    def _read(self) -> Database:
        """A read-only connection (a context manager): creates and changes nothing."""
        from perflab.store import Database

        return Database(self.path, write=False)

    def __repr__(self) -> str:
        return f"perflab.open({str(self.path)!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to close: each call opens and closes its own connection."""

    def experiments(self) -> pd.DataFrame:
        """One row per experiment, newest first (as `perflab ls`): id, name, status, source,
        started, finished, runs, ok, failed, pending, baseline, spec_path, description."""
        from perflab.analysis.frames import experiments_frame

        with self._read() as db:
            return experiments_frame(db.experiments())

    def experiment(self, id: Ref = "last") -> Experiment:
        """Experiment ``id`` (a number, a name — its latest — or ``"last"``)."""
        with self._read() as db:
            row = db.experiment(id)
            counts = db.status_counts(row.id)
        return Experiment.of(self, row, counts)

    def runs(self, id: Ref = "last") -> pd.DataFrame:
        """The tidy table of experiment ``id``'s runs: one row per run × metric (see
        `perflab.analysis.frames.runs_frame` for its columns)."""
        from perflab.analysis.frames import runs_frame

        with self._read() as db:
            row = db.experiment(id)
            return runs_frame(row, db.metric_defs(row.id), db.runs(row.id), db.metrics(row.id))

    def compare(
        self,
        id: Ref = "last",
        other: Ref | None = None,
        *,
        variants: Sequence[str | tuple[str, str]] | None = None,
        metrics: Sequence[str] | None = None,
        across: str | tuple[str, str] | None = None,
        **statistics: Unpack[CompareKwargs],
    ) -> Answer:
        """What `perflab compare id [other]` computes, with its options:

        - ``other``: compare experiment ``other`` against ``id`` as the baseline, cell by
          cell; ``variants`` then pairs variants (``"name"`` or ``("name_a", "name_b")``);
          without ``other``, ``variants`` keeps only these candidates;
        - ``metrics``: compare these metrics only (the correction's family is then theirs);
        - ``across``: ``"PARAM=VALUE"`` or ``(PARAM, VALUE)``: every cell against the cell
          where PARAM=VALUE, within each variant (`perflab compare --across`);
        - the statistics options, as the command's (`perflab.analysis.request.CompareKwargs`):
          ``method`` (``auto``, ``welch``, ``bootstrap``, ``mannwhitney``, ``paired``),
          ``interval``, ``statistic``, ``resamples``, ``scale``, ``confidence`` (default:
          the experiment's, 0.95), ``threshold`` (``0.01`` or ``"1%"``), ``correction``
          (``holm``, ``bonferroni``, ``bh``, ``none``), ``diagnostics`` (per-cell
          diagnostics on or off; default: on for small tables).
        """
        from perflab.analysis.answer import answer
        from perflab.analysis.request import ask
        from perflab.api.rendering import show_in_notebooks

        request = ask(
            id, other, variants=variants or (), across=across, metrics=metrics or (), **statistics
        )
        with self._read() as db:
            found = answer(db, request)
        show_in_notebooks()
        return found

    def scaling(
        self,
        id: Ref = "last",
        param: str = "",
        *,
        other: Ref | None = None,
        exponent: float | None = None,
        at: str | float | None = None,
        metrics: Sequence[str] | None = None,
        confidence: float | None = None,
        threshold: float | str = 0.0,
    ) -> Answer:
        """What `perflab compare id [other] --scaling param` computes: cost = a + b·param^k
        fitted per variant and metric (k fitted unless ``exponent``), and each candidate's
        per-unit cost against the baseline's (at size ``at``, else where the data is): the
        answer's ``fits``."""
        from perflab.analysis.answer import answer
        from perflab.analysis.request import ask

        if not param:
            raise InputError("scaling: name the numeric matrix parameter to fit over (param=…)")
        request = ask(
            id,
            other,
            scaling=param,
            exponent=exponent,
            at=at,
            metrics=metrics or (),
            table=False,
            confidence=confidence,
            threshold=threshold,
        )
        with self._read() as db:
            return answer(db, request)

    def history(
        self,
        name: str | None = None,
        *,
        experiments: Sequence[Ref] = (),
        metrics: Sequence[str] = (),
        cell: str | None = None,
        variant: str | None = None,
        confidence: float | None = None,
        min_effect: float = 0.005,
    ) -> History:
        """What `perflab history name` computes: every experiment of ``name`` (or
        ``experiments``) by version, each version's runs summarised per metric, cell and
        variant (``History.series[k].points``) and the change points between versions
        (``.found``); the options are the command's (``min_effect`` a fraction)."""
        from perflab.api.history import HistoryRequest
        from perflab.api.history import history as make

        request = HistoryRequest(
            name, tuple(experiments), tuple(metrics), cell, variant, confidence, min_effect
        )
        with self._read() as db:
            return make(db, request)

    def profile_movers(self, id: Ref = "last", **options: Unpack[CompareKwargs]) -> pd.DataFrame:
        """The functions whose share of the profiles' samples changed, candidate against
        baseline, with Welch's interval (one row per function, phase, cell and candidate;
        empty when the experiment was not profiled): `perflab compare --json`'s
        ``profile_movers``. ``options``: `compare`'s statistics options."""
        import pandas as pd

        from perflab.analysis.answer import answer
        from perflab.analysis.request import ask

        request = ask(id, movers=True, **options)
        with self._read() as db:
            movers = answer(db, request).movers
        return pd.DataFrame([m.as_dict() for m in movers], columns=MOVER_COLUMNS)

    def export(self, id: Ref, path: str | os.PathLike[str], *, format: str | None = None) -> Path:
        """Write `runs(id)` to ``path`` — ``.csv`` or ``.parquet``, or ``format`` — whole
        (a temporary file, then renamed); the path is checked before the store is read."""
        from perflab.api.files import check_table_path, write_table

        kind = check_table_path(path, format)
        return write_table(self.runs(id), path, kind)


@dataclass(frozen=True)
class Experiment:
    """One stored experiment as it was when read: ``status`` is ``complete``, ``running``,
    ``interrupted``, ``aborted``…; ``counts`` its runs by status."""

    store: Store = field(repr=False)
    id: int
    name: str
    status: str
    source: str
    baseline: str
    spec_path: str | None
    counts: dict[str, int]

    @classmethod
    def of(cls, store: Store, row: ExperimentRow, counts: dict[str, int]) -> Experiment:
        return cls(
            store, row.id, row.name, row.status, row.source, row.baseline, row.spec_path, counts
        )

    @property
    def ok(self) -> int:
        """Runs that succeeded."""
        return self.counts.get("ok", 0)

    @property
    def failed(self) -> int:
        """Runs that failed or timed out."""
        return self.counts.get("failed", 0) + self.counts.get("timeout", 0)

    def runs(self) -> pd.DataFrame:
        """`Store.runs` of this experiment."""
        return self.store.runs(self.id)

    def compare(self, other: Ref | None = None, **options: Any) -> Answer:
        """`Store.compare` of this experiment (the same options)."""
        return self.store.compare(self.id, other, **options)

    def refresh(self) -> Experiment:
        """This experiment as the store holds it now."""
        return self.store.experiment(self.id)


def open(path: str | os.PathLike[str] | None = None) -> Store:
    """The store at ``path`` (default: ``$PERFLAB_STORE``, else ``./perflab.db``), read-only.

    A missing file, or one that is not a perflab store: `perflab.errors.StoreError` (one
    line)."""
    return Store(path)
