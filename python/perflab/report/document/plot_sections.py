"""The report's sections of plots: relative change per metric, distributions of runs,
runs in execution order, latency spectra, metrics against numeric matrix parameters.

A plot is a `Plot` block whose ``make`` draws the figure later (`perflab.report.plots`),
numbered in reading order across the sections by one `PlotNumbering`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.blocks import Block, Para, Plot, Section
from perflab.report.document.model import Report
from perflab.report.tables import summary_tables

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


class PlotNumbering:
    """Makes `Plot` blocks keyed ``NN-kind-name`` (``01-change-ops-per-sec``), NN counting
    the plots in reading order: the key names the plot's file in a Markdown report."""

    def __init__(self) -> None:
        self.count = 0

    def plot(
        self, kind: str, name: str, title: str, caption: str, alt: str, make: Callable[[], Figure]
    ) -> Plot:
        self.count += 1
        return Plot(f"{self.count:02d}-{kind}-{_slug(name)}", title, caption, alt, make)


def change_section(r: Report, numbering: PlotNumbering) -> Section:
    result, data = r.result, r.result.dataset
    blocks: list[Block] = []
    for m in data.metrics:
        blocks.append(
            numbering.plot(
                "change",
                m.name,
                f"{m.name}: relative change",
                f"Relative change of {m.name} against {data.baseline} per cell, with its "
                f"{result.confidence:.0%} interval; the vertical line is no change.",
                f"Interval plot of the relative change of {m.name} for each matrix cell; "
                f"the TLDR table above gives the same intervals as text.",
                functools.partial(plots.relative_change, result, m, r.colors),
            )
        )
    return Section("change", "Relative change per metric", tuple(blocks))


def distributions_section(r: Report, numbering: PlotNumbering) -> Section:
    result, metrics = r.run_result, r.run_result.dataset.metrics
    blocks: list[Block] = []
    summary_by_metric = {m.name: t for m, t in zip(metrics, summary_tables(result, r.colors))}
    for m in metrics:
        blocks.append(
            numbering.plot(
                "runs",
                m.name,
                f"{m.name}: distribution of runs",
                f"Each point is one measured run (warm-ups excluded); the black bar is the mean "
                f"with its {result.confidence:.0%} confidence interval. Each cell has its own y axis.",
                f"Strip plot of every run's {m.name} ({m.unit}) per variant and cell.",
                functools.partial(plots.distribution, result, m, r.colors),
            )
        )
        blocks.append(summary_by_metric[m.name])
    return Section("distributions", "Distributions of runs", tuple(blocks))


def order_section(r: Report, numbering: PlotNumbering) -> Section:
    result, data = r.run_result, r.run_result.dataset
    if not r.runs.runs:
        blocks: list[Block] = [Para.of("No per-run data is stored for this experiment.")]
        return Section("order", "Runs in execution order", tuple(blocks))
    interleaved = (
        data.experiment.settings.get("order", "interleaved") == "interleaved" and not r.cross
    )
    caption = (
        "Runs in the order they ran, coloured by variant; hollow markers are warm-up "
        "runs, which the statistics leave out. A trend or a step is drift of the "
        "machine, not a difference between variants"
        + (" (interleaved blocks spread it over every variant)." if interleaved else ".")
    )
    blocks = [
        numbering.plot(
            "order",
            m.name,
            f"{m.name}: runs in execution order",
            caption,
            f"Scatter plot of {m.name} ({m.unit}) against run number, one panel per cell.",
            functools.partial(plots.run_order, result, r.runs, m, r.colors),
        )
        for m in data.metrics
    ]
    return Section("order", "Runs in execution order", tuple(blocks))


def latency_section(r: Report, numbering: PlotNumbering) -> Section | None:
    """One spectrum per kv phase with stored histograms; None without any."""
    phases = list(dict.fromkeys(s.phase for s in r.runs.spectra))
    if not phases:
        return None
    data = r.run_result.dataset
    blocks: list[Block] = []
    cells = [k for k, _ in data.cells]
    for phase in phases:
        totals: dict[str, list[int]] = {}
        for s in r.runs.spectra:
            if s.phase == phase:
                t = totals.setdefault(s.variant, [0, 0])
                t[0] += s.requests
                t[1] += s.runs
        reqs = "; ".join(f"{v}: {q:,} requests in {k} runs" for v, (q, k) in totals.items())
        blocks.append(
            numbering.plot(
                "latency",
                phase,
                f"latency spectrum of phase {phase}",
                "Latency at each percentile from the stored HDR histograms: bold lines merge "
                "every measured run's histogram (the right way to pool percentiles), thin lines "
                f"are single runs. x: 90%, 99%, 99.9%… equally spaced. {reqs}.",
                f"Line plot of latency in ms against percentile for phase {phase}, per variant.",
                functools.partial(
                    plots.spectrum, phase, r.runs.spectra, data.variants, cells, r.colors
                ),
            )
        )
    return Section("latency", "Latency percentile spectra", tuple(blocks))


def params_section(r: Report, numbering: PlotNumbering) -> Section | None:
    """Each metric against each numeric matrix parameter; None without any."""
    if not r.runs.numeric_params:
        return None
    result, data = r.run_result, r.run_result.dataset
    blocks: list[Block] = []
    for param, values in r.runs.numeric_params.items():
        for m in data.metrics:
            blocks.append(
                numbering.plot(
                    "scaling",
                    f"{m.name}-{param}",
                    f"{m.name} against {param}",
                    f"Mean of {m.name} at each value of {param} with its "
                    f"{result.confidence:.0%} confidence band (left), and the relative change "
                    f"against {data.baseline} with its interval (right).",
                    f"Line plots of {m.name} and of its relative change against {param}.",
                    functools.partial(plots.scaling, result, param, values, m, r.colors),
                )
            )
    return Section("scaling", "Metrics against the matrix parameters", tuple(blocks))


def monitor_section(r: Report, numbering: PlotNumbering) -> Section | None:
    """Monitor time series per phase and cell (`plots.monitor_panels`); None without any."""
    if not r.runs.monitors:
        return None
    data = r.run_result.dataset
    keys = list(dict.fromkeys((m.phase, m.cell_key) for m in r.runs.monitors))
    order = {k: i for i, (k, _) in enumerate(data.cells)}
    keys.sort(key=lambda pc: order.get(pc[1], len(order)))
    blocks: list[Block] = [
        numbering.plot(
            "monitor",
            f"{phase}-{cell}",
            f"monitors of phase {phase}" + (f", {cell}" if cell not in ("", "-") else ""),
            "What /proc showed while the phase ran, sampled at the spec's monitor interval: "
            "counters as rates over each interval, gauges as sampled; one line per measured "
            "run, a column per variant, each row on one scale. Their per-run summaries "
            "(e.g. vmstat.pgfault_per_s) are compared like any metric when the spec names them.",
            f"Time-series panels of page faults, reclaim, memory, pressure, CPU and network "
            f"during phase {phase}, per variant.",
            functools.partial(
                plots.monitor_panels, phase, cell, r.runs.monitors, data.variants, r.colors
            ),
        )
        for phase, cell in keys[:12]
    ]
    return Section("monitors", "Monitors during the phases", tuple(blocks))
