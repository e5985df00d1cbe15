"""`Report`: what a report shows, as data — the comparison, the runs, the header facts and
the sections of blocks that every writer (HTML, Markdown, JSON) draws the same way."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from perflab.analysis.comparison_table import ComparisonTable
from perflab.analysis.scaling import ScalingResult
from perflab.records import ExperimentRow
from perflab.report.blocks import Block, Details, FlameGraph, Para, Plot, Section
from perflab.report.profile_section import ProfileReport
from perflab.report.rundata import RunData


@dataclass(frozen=True)
class Report:
    result: ComparisonTable
    runs: RunData
    experiments: list[ExperimentRow]  # the experiment, or (A, B) for a two-experiment comparison
    colors: dict[str, str]
    title: str
    description: str
    meta: list[str]  # one-line facts under the title
    verdict: list[Para]
    reproduce: list[tuple[str, str]]  # (what it does, command line)
    generated_at: str
    sections: list[Section] = field(default_factory=list)
    scaling: ScalingResult | None = None  # `--scaling PARAM`: the fits of cost = a + b·PARAM^k
    profile: ProfileReport | None = None  # perf profiles: flame graphs, top movers
    #: The result whose cells and variants the run plots are drawn over, when not
    #: ``result``'s: an across-cells comparison's (`perflab.analysis.across.run_view`).
    runs_view: ComparisonTable | None = None

    @property
    def run_result(self) -> ComparisonTable:
        """What the plots of runs (distributions, execution order, spectra, parameters,
        monitors) draw: the experiment's own cells and variants."""
        return self.runs_view if self.runs_view is not None else self.result

    def flame_graphs(self) -> list[FlameGraph]:
        return [] if self.profile is None else list(self.profile.graphs)

    @property
    def cross(self) -> bool:
        return len(self.experiments) > 1

    def plots(self) -> list[Plot]:
        """Every plot of the report, in reading order."""
        out: list[Plot] = []

        def walk(blocks: Iterable[Block]) -> None:
            for b in blocks:
                if isinstance(b, Plot):
                    out.append(b)
                elif isinstance(b, (Section, Details)):
                    walk(b.blocks)

        for s in self.sections:
            walk(s.blocks)
        return out
