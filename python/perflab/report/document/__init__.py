"""The report model: a `CompareResult` plus what the store holds about its runs, laid
out as sections in a fixed order (issue 6):

  verdict → TLDR → relative change per metric → distributions of runs → runs in
  execution order → latency percentile spectra → metrics against numeric parameters →
  warnings and failed runs → environment → run output → the spec as run → how to reproduce.

Statistics come from the `CompareResult` (computed once in `stats/` through
`analysis.compare`); this package only chooses what to show and in which words, as the
blocks of `blocks.py` (the comparison's tables come from `tables.py`, as for
``perflab compare``). Writers (`html.py`, `markdown.py`, `json_doc.py`) draw the same
`Report`; `output.py` writes it.

Here: the entry points. `model` holds `Report`; `sections` puts the sections in order,
`plot_sections` and `detail_sections` build them; `header` writes the one-line facts
under the title and `reproduce` the commands that give the report again.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from perflab.analysis.compare import CompareResult, compare_dataset
from perflab.analysis.cross import RunOrigin, compare_cross, cross_dataset, single_origin
from perflab.analysis.dataset import load_dataset
from perflab.analysis.scaling import ScalingOptions, ScalingResult, fit_dataset
from perflab.report.document.header import meta_lines
from perflab.report.document.model import Report
from perflab.report.document.reproduce import reproduce_commands
from perflab.report.document.sections import with_sections
from perflab.report.palette import variant_colors
from perflab.report.profile_section import load_profile_report
from perflab.report.rundata import load_run_data
from perflab.report.verdict import verdict_paragraphs
from perflab.store import ExperimentRow, Store

__all__ = ["Report", "build_report", "report_for", "report_for_pair"]


def report_for(
    store: Store,
    ref: str | int,
    *,
    scaling: ScalingOptions | None = None,
    across: tuple[str, str] | None = None,
    **options: Any,
) -> Report:
    """The report of one stored experiment (id, name or ``last``); options as `compare_dataset`'s;
    ``scaling`` adds a section with the scaling fits (`perflab.analysis.scaling`);
    ``across`` (PARAM, VALUE) compares every cell with the cell where PARAM=VALUE, within
    each variant (`perflab.analysis.across`), and the plots of runs show every cell."""
    data = load_dataset(store, ref)
    if across is not None:
        from perflab.analysis.across import across_dataset, compare_across, run_view

        cells = across_dataset(data, *across)
        compared = compare_across(cells, **options)
        return build_report(
            store,
            compared,
            single_origin(data),
            [data.experiment],
            runs_view=run_view(cells, compared),
        )
    result = compare_dataset(data, **options)
    fits = (
        fit_dataset(data, scaling, confidence=result.confidence, threshold=result.threshold)
        if scaling
        else None
    )
    return build_report(store, result, single_origin(data), [data.experiment], fits)


def report_for_pair(
    store: Store,
    ref_a: str | int,
    ref_b: str | int,
    *,
    pairs: list[tuple[str, str]] | None = None,
    scaling: ScalingOptions | None = None,
    **options: Any,
) -> Report:
    """Experiment B against experiment A as the baseline (see `perflab.analysis.cross`)."""
    cross = cross_dataset(store, ref_a, ref_b, pairs)
    result = compare_cross(cross, **options)
    fits = (
        fit_dataset(
            cross.dataset, scaling, confidence=result.confidence, threshold=result.threshold
        )
        if scaling
        else None
    )
    return build_report(store, result, cross.origins, [cross.a, cross.b], fits)


def build_report(
    store: Store,
    result: CompareResult,
    origins: list[RunOrigin],
    experiments: list[ExperimentRow],
    scaling: ScalingResult | None = None,
    *,
    runs_view: CompareResult | None = None,
) -> Report:
    """The report of ``result``, its runs read from ``origins``; ``runs_view``: the result
    whose cells and variants the plots of runs draw, when not ``result``'s (`Report`)."""
    data = result.dataset
    runs = load_run_data(store, origins, (runs_view or result).dataset)
    colors = variant_colors(data.variants)
    e = data.experiment
    report = Report(
        result=result,
        runs=runs,
        experiments=experiments,
        colors=colors,
        title=e.name
        if len(experiments) == 1
        else f"{experiments[1].name} #{experiments[1].id} vs "
        f"{experiments[0].name} #{experiments[0].id}",
        description=e.description,
        meta=meta_lines(result, runs, experiments),
        verdict=verdict_paragraphs(result),
        reproduce=reproduce_commands(store, result, experiments, scaling),
        generated_at=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip(),
        scaling=scaling,
        profile=load_profile_report(store, e.id, data.variants, data.baseline, result.confidence)
        if len(experiments) == 1
        else None,
        runs_view=runs_view,
    )
    return with_sections(report)
