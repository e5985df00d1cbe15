"""The TLDR as a picture: each cell's relative change against the baseline with its
interval, one row per cell (and candidate variant), 0 = no change."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from perflab.analysis.comparison_table import ComparedCell, ComparisonTable
from perflab.records import MetricDef
from perflab.report.numbers import tldr_text
from perflab.report.palette import VERDICT_COLORS
from perflab.report.plots.axes import WIDTH, cell_title, pct_tick
from perflab.stats import Verdict


def relative_change(result: ComparisonTable, metric: MetricDef, colors: dict[str, str]) -> Figure:
    """Each cell's relative change vs the baseline with its interval; 0 = no change."""
    data = result.dataset
    by_key = {
        (c.cell_key, c.variant): c for c in result.comparisons if c.metric.name == metric.name
    }
    rows = [(key, v) for key, _ in data.cells for v in result.candidates]
    fig = Figure(figsize=(WIDTH, 1.25 + 0.42 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    bounds = [0.0]
    for y, (key, v) in enumerate(rows):
        bounds += _draw_row(ax, y, by_key.get((key, v)), colors[v])
    ax.axvline(0, color="#24292f", linewidth=1.0, zorder=2)
    if result.threshold > 0:
        t = result.threshold * 100
        ax.axvspan(-t, t, color="#eaeef2", zorder=1, label=f"±{t:g}% noise threshold")
        bounds += [-t, t]
    _set_axes(ax, result, metric, _row_labels(result, rows), bounds)
    _direction_hints(ax, metric)
    fig.suptitle(f"{metric.name}: change vs {data.baseline}", x=0.01, ha="left")
    return fig


def _row_labels(result: ComparisonTable, rows: list[tuple[str, str]]) -> list[str]:
    """The cell, with the variant when there are several candidates."""
    many = len(result.candidates) > 1
    labels = []
    for key, v in rows:
        name = cell_title(key)
        labels.append(f"{name} · {v}" if many and name else (name or v))
    return labels


def _draw_row(ax: Axes, y: int, c: ComparedCell | None, color: str) -> list[float]:
    """One row: the interval (on the % axis) and the TLDR text right of the axes; returns
    the interval's bounds in %, for the axis limits."""
    k = c.comparison if c else None
    text = tldr_text(k, c.verdict, c.metric.unit) if c else "n/a"
    if c is not None and c.verdict in (Verdict.BETTER, Verdict.WORSE):
        text += f" {c.verdict.value}"
    bounds: list[float] = []
    if k is not None and k.defined and k.scale != "absolute":  # the axis is in %; the text says it
        est, lo, hi = k.estimate * 100, k.low * 100, k.high * 100
        bounds += [lo, hi]
        ax.errorbar(
            [est],
            [y],
            xerr=[[est - lo], [hi - est]],
            fmt="o",
            color=color,
            ecolor=color,
            elinewidth=2.2,
            capsize=4,
            markersize=6,
            zorder=3,
        )
    ax.annotate(
        text,
        xy=(1.01, y),
        xycoords=("axes fraction", "data"),
        va="center",
        ha="left",
        color=VERDICT_COLORS[c.verdict] if c else "#57606a",
        fontsize=8.5,
        annotation_clip=False,
        fontweight="bold" if c and c.verdict in (Verdict.BETTER, Verdict.WORSE) else "normal",
    )
    return bounds


def _set_axes(
    ax: Axes, result: ComparisonTable, metric: MetricDef, labels: list[str], bounds: list[float]
) -> None:
    lo, hi = min(bounds), max(bounds)
    pad = max((hi - lo) * 0.12, 0.5)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_yticks(range(len(labels)), labels)
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_formatter(FuncFormatter(pct_tick))
    baseline = result.dataset.baseline
    vs = (
        f"{result.candidates[0]} vs {baseline}"
        if len(result.candidates) <= 1
        else f"each variant vs {baseline}"
    )
    ax.set_xlabel(
        f"relative change of the mean of {metric.name} ({result.confidence:.0%} CI, {vs})"
    )


def _direction_hints(ax: Axes, metric: MetricDef) -> None:
    """ "better →" / "← worse" above the axes, on the side the metric improves."""
    good_right = metric.better == "higher"
    ax.text(
        1.0,
        1.02,
        "better →" if good_right else "worse →",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        color=VERDICT_COLORS[Verdict.BETTER if good_right else Verdict.WORSE],
        fontsize=8,
    )
    ax.text(
        0.0,
        1.02,
        "← worse" if good_right else "← better",
        transform=ax.transAxes,
        ha="left",
        va="bottom",
        color=VERDICT_COLORS[Verdict.WORSE if good_right else Verdict.BETTER],
        fontsize=8,
    )
