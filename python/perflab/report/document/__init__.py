"""The report model: an answer (`perflab.analysis.answer.Answer`) plus what the store holds about its runs, laid
out as sections in a fixed order (issue 6):

  verdict → TLDR → relative change per metric → distributions of runs → runs in
  execution order → latency percentile spectra → metrics against numeric parameters →
  warnings and failed runs → environment → run output → the spec as run → how to reproduce.

Statistics come from the `ComparisonTable` (computed once in `stats/` through
`analysis.against_baseline`); this package only chooses what to show and in which words, as the
blocks of `blocks.py` (the comparison's tables come from `tables.py`, as for
``perflab compare``). Writers (`html.py`, `markdown.py`, `json_doc.py`) draw the same
`Report`; `output.py` writes it.

Here: the entry points. `model` holds `Report`; `sections` puts the sections in order,
`plot_sections` and `detail_sections` build them; `header` writes the one-line facts
under the title and `reproduce` the commands that give the report again.
"""

from __future__ import annotations

import datetime as dt

from perflab.analysis.answer import Answer
from perflab.observe.movers import RunProfile
from perflab.report.document.header import meta_lines
from perflab.report.document.model import Report
from perflab.report.document.reproduce import reproduce_commands
from perflab.report.document.sections import with_sections
from perflab.report.palette import variant_colors
from perflab.report.profile_section import profile_report
from perflab.report.rundata import RunData
from perflab.report.verdict import verdict_paragraphs

__all__ = ["Report", "build_report"]


def build_report(
    found: Answer,
    runs: RunData,
    *,
    profiles: dict[str, list[RunProfile]] | None = None,
    store_path: str | None = None,
) -> Report:
    """The report of the answer ``found`` (its comparison, its scaling fits, across: the
    comparison whose cells and variants the plots of runs draw) with its runs' data
    (`RunData`, read by the use-case layer); ``profiles``: one experiment's profiles,
    phase → runs; ``store_path``: the store's, when not the default (for the commands to
    reproduce the report)."""
    result, experiments, scaling = found.comparison, found.experiments, found.fits
    runs_view = found.runs_view
    data = result.dataset
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
        reproduce=reproduce_commands(store_path, result, experiments, scaling),
        generated_at=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip(),
        scaling=scaling,
        profile=profile_report(profiles, data.variants, data.baseline, result.confidence)
        if profiles is not None and len(experiments) == 1
        else None,
        runs_view=runs_view,
    )
    return with_sections(report)
