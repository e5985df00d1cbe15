"""`perflab report`'s question answered: a comparison (`perflab.analysis.answer.answer`)
with everything the report draws read from the store once — the runs' values, latency
histograms, outputs, environments, monitor series and profiles — so that `report/` only
lays out and writes, and never opens a store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.analysis.answer import answer
from perflab.analysis.request import ComparisonRequest

if TYPE_CHECKING:
    from perflab.report.document import Report
    from perflab.store import Database


def build_report(store: Database, request: ComparisonRequest) -> Report:
    """The report of ``request`` (its comparison, scaling fits and, for one experiment,
    its profiles), with its runs' data from ``store``."""
    from perflab.api.run_reader import load_run_data
    from perflab.observe.movers import read_profiles
    from perflab.report.document import build_report as lay_out
    from perflab.store.location import default_store_path

    found = answer(store, request)
    runs = load_run_data(store, found.origins, (found.runs_view or found.comparison).dataset)
    one = found.experiments[0].id if len(found.experiments) == 1 else None
    default = store.path.resolve() == default_store_path().resolve()  # a URL: never
    return lay_out(
        found,
        runs,
        profiles=read_profiles(store, one) if one is not None else None,
        store_path=None if default else str(store.path),
    )
