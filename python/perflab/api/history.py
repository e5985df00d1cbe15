"""`perflab history`'s question answered: a metric across the versions of a series — every
experiment of a name (or the experiments named) read from the store once, each version's
runs summarised with their interval, and the change points between versions
(`perflab.analysis.version_series`). `perflab history` and Python callers both call `history`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.analysis.version_series import History
    from perflab.records import ExperimentRow
    from perflab.store import Database


@dataclass(frozen=True)
class HistoryRequest:
    """What series to show.

    - ``name``: every experiment of this name; or ``experiments``: these (ids, names — the
      latest of that name — or ``last``), exactly one of the two;
    - ``metrics``, ``cell``, ``variant``: only these metrics, this cell (its key, as
      `perflab compare` names it: ``keys=1000``), this variant (default: every one);
    - ``confidence``: the level of every interval (default: 95% for each version's, 99%
      for the change points', whose search looks in many places);
    - ``min_effect``: the change points' guard, a fraction (0.005: a change is reported
      only when its whole interval lies beyond ±0.5%).
    """

    name: str | None = None
    experiments: tuple[str | int, ...] = ()
    metrics: tuple[str, ...] = ()
    cell: str | None = None
    variant: str | None = None
    confidence: float | None = None
    min_effect: float = 0.005

    def __post_init__(self) -> None:
        if (self.name is None) == (not self.experiments):
            raise InputError("name the series (perflab history NAME), or give --experiments IDS")
        if self.confidence is not None and not 0.5 < self.confidence < 1:
            raise InputError(
                f"--confidence must be between 0.5 and 1, e.g. 0.99 (got {self.confidence})"
            )
        if not 0 <= self.min_effect < 1:
            raise InputError(
                f"--min-effect must be a percentage below 100 (got {self.min_effect:.2%})"
            )


def parse_experiments(text: str) -> tuple[str, ...]:
    """``--experiments 3,5,9`` as its items (ids, names or ``last``), in the order given."""
    items = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not items:
        raise InputError(f"--experiments {text!r}: expected ids separated by commas, e.g. 3,5,9")
    return items


def history(store: Database, request: HistoryRequest) -> History:
    """The history of ``request`` over ``store`` (see `HistoryRequest`)."""
    from perflab.analysis import version_series as series
    from perflab.analysis.dataset import load_dataset

    rows = _experiments(store, request)
    data = [load_dataset(store, e.id) for e in rows]
    name = request.name or ", ".join(dict.fromkeys(e.name for e in rows))
    return series.build_history(
        name,
        data,
        series.Selection(request.metrics, request.cell, request.variant),
        confidence=request.confidence or series.CONFIDENCE,
        change_confidence=request.confidence or series.CHANGE_CONFIDENCE,
        min_effect=request.min_effect,
    )


def _experiments(store: Database, request: HistoryRequest) -> list[ExperimentRow]:
    """The experiments of the series, oldest first; InputError (one line) for none."""
    if request.experiments:
        found = {e.id: e for e in (store.experiment(ref) for ref in request.experiments)}
        return sorted(found.values(), key=lambda e: e.id)
    listed = [e for e, _ in store.experiments()]
    rows = sorted((e for e in listed if e.name == request.name), key=lambda e: e.id)
    if not rows:
        names = list(dict.fromkeys(e.name for e in sorted(listed, key=lambda e: e.id)))
        shown = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
        raise InputError(
            f"no experiment named '{request.name}' in {store.path}"
            + (f" (names: {shown})" if names else " (it holds no experiments)")
        )
    return rows
