"""The runs themselves: every run's value per variant beside the mean and its interval
(`distribution`), and the values in execution order (`run_order`), a panel per cell."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from perflab.analysis.comparison_table import ComparisonTable
from perflab.records import MetricDef
from perflab.report.plots.axes import (
    MAX_COLS,
    MAX_PANELS,
    axis_label,
    cell_title,
    grid,
    value_formatter,
)
from perflab.report.rundata import RunData, RunPoint
from perflab.stats import Summary


def distribution(result: ComparisonTable, metric: MetricDef, colors: dict[str, str]) -> Figure:
    """Every run as a point per variant, beside the mean and its interval; a panel per cell."""
    data = result.dataset
    summaries = {
        (s.cell_key, s.variant): s.summary for s in result.summaries if s.metric.name == metric.name
    }
    cells = data.cells[:MAX_PANELS]
    fig, axes = grid(len(cells), panel_w=max(2.6, 0.9 * len(data.variants) + 1.0), panel_h=2.7)
    rng = np.random.default_rng(
        0
    )  # jitter only; fixed so that the same data draws the same picture
    for ax, (key, _labels) in zip(axes, cells):
        for x, v in enumerate(data.variants):
            values = data.sample(key, v, metric.name)
            if values:
                jitter = rng.uniform(-0.13, 0.13, len(values)) if len(values) > 1 else np.zeros(1)
                ax.scatter(
                    x - 0.08 + jitter,
                    values,
                    s=16,
                    color=colors[v],
                    alpha=0.75,
                    linewidths=0,
                    zorder=3,
                )
            _mean_bar(ax, x, summaries.get((key, v)))
        ax.set_xticks(range(len(data.variants)), data.variants)
        for tick, v in zip(ax.get_xticklabels(), data.variants):
            tick.set_color(colors[v])
        if max((len(v) for v in data.variants), default=0) * len(data.variants) > 28:
            ax.tick_params(axis="x", labelrotation=20)
        ax.set_xlim(-0.6, len(data.variants) - 0.4)
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_formatter(value_formatter(metric.unit))
        ax.set_title(cell_title(key))
    for i, ax in enumerate(axes):
        if i % MAX_COLS == 0:
            ax.set_ylabel(axis_label(metric))
    fig.suptitle(
        f"{metric.name}: every run (points) and the mean with its {result.confidence:.0%} CI (bar)",
        x=0.01,
        ha="left",
    )
    return fig


def _mean_bar(ax: Axes, x: int, s: Summary | None) -> None:
    """The mean beside variant ``x``'s points, with its interval when it has one."""
    if s is None:
        return
    if math.isfinite(s.ci_low) and math.isfinite(s.ci_high):
        ax.errorbar(
            [x + 0.27],
            [s.mean],
            yerr=[[s.mean - s.ci_low], [s.ci_high - s.mean]],
            fmt="_",
            color="#24292f",
            markersize=12,
            capsize=3,
            elinewidth=1.4,
            zorder=4,
        )
    else:
        ax.plot([x + 0.27], [s.mean], "_", color="#24292f", markersize=12, zorder=4)


def run_order(
    result: ComparisonTable, runs: RunData, metric: MetricDef, colors: dict[str, str]
) -> Figure:
    """Values against execution order, coloured by variant: drift and warm-up effects show."""
    data = result.dataset
    cells = data.cells[:MAX_PANELS]
    fig, axes = grid(len(cells), panel_w=4.4, panel_h=2.4, sharex=True, extra_h=0.3)
    by_cell: dict[str, list[RunPoint]] = {}
    for r in runs.runs:
        if metric.name in r.values:
            by_cell.setdefault(r.cell_key, []).append(r)
    for ax, (key, _labels) in zip(axes, cells):
        pts = by_cell.get(key, [])
        for v in data.variants:
            _runs_of_variant(ax, [r for r in pts if r.variant == v], metric.name, colors[v])
        for start, _label in runs.sides[1:]:
            ax.axvline(start - 0.5, color="#57606a", linestyle="--", linewidth=0.8)
        ax.yaxis.set_major_formatter(value_formatter(metric.unit))
        ax.set_title(cell_title(key))
    for i, ax in enumerate(axes):
        if i % MAX_COLS == 0:
            ax.set_ylabel(axis_label(metric))
        if i >= len(axes) - MAX_COLS:
            ax.set_xlabel(
                "run (execution order)"
                + (" — " + " | ".join(lbl for _, lbl in runs.sides) if runs.sides else "")
            )
    _run_order_legend(fig, data.variants, colors, any(r.warmup for r in runs.runs))
    fig.suptitle(f"{metric.name} in the order the runs ran", x=0.01, ha="left")
    return fig


def _runs_of_variant(ax: Axes, pts: list[RunPoint], metric: str, color: str) -> None:
    """One variant's runs in a cell: measured ones joined by a line, warm-ups hollow."""
    measured = [(r.position, r.values[metric]) for r in pts if not r.warmup]
    warm = [(r.position, r.values[metric]) for r in pts if r.warmup]
    if measured:
        xs, ys = zip(*measured)
        ax.plot(xs, ys, "-", color=color, linewidth=0.7, alpha=0.45, zorder=2)
        ax.scatter(xs, ys, s=14, color=color, linewidths=0, zorder=3)
    if warm:
        xs, ys = zip(*warm)
        ax.scatter(xs, ys, s=18, facecolors="none", edgecolors=color, linewidths=1.0, zorder=3)


def _run_order_legend(
    fig: Figure, variants: list[str], colors: dict[str, str], warmups: bool
) -> None:
    handles = [
        Line2D([], [], marker="o", linestyle="-", linewidth=0.7, color=colors[v], label=v)
        for v in variants
    ]
    if warmups:
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                linestyle="",
                markerfacecolor="none",
                markeredgecolor="#57606a",
                label="warm-up (not in the statistics)",
            )
        )
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 4), frameon=False
    )
