"""A metric over the versions of a series (`perflab history`): each variant's mean per
version with its interval as an error bar, and each change point as a vertical line
between the two versions it lies between, labelled with the change and its interval."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from perflab.analysis.version_series import History, Series
from perflab.report.history_words import change_size
from perflab.report.numbers import readable_unit
from perflab.report.palette import VERDICT_COLORS
from perflab.report.plots.axes import WIDTH, tick


def trend(history: History, series: Sequence[Series], colors: dict[str, str], title: str) -> Figure:
    """``series`` (one metric at one cell, a variant each) over ``history``'s versions."""
    labels = [v.label for v in history.versions]
    metric = series[0].metric
    means = sorted(abs(p.mean) for s in series for p in s.points if p is not None)
    unit, factor = readable_unit(metric.unit, means[len(means) // 2] if means else math.nan)
    long = max(map(len, labels)) > 8 or len(labels) > 12
    fig = Figure(figsize=(WIDTH, 3.9 + (0.5 if long else 0)), layout="constrained")
    ax = fig.add_subplot()
    spread = 0.12 if len(series) > 1 else 0.0
    stacked = 0  # change labels drawn so far: each one a line lower, so that none overlaps
    for k, s in enumerate(series):
        dx = (k - (len(series) - 1) / 2) * spread
        points = [(i, p) for i in s.present if (p := s.points[i]) is not None]
        xs = [i + dx for i, _ in points]
        ys = [p.mean * factor for _, p in points]
        below = [_half(p.mean - p.ci_low) * factor for _, p in points]
        above = [_half(p.ci_high - p.mean) * factor for _, p in points]
        color = colors[s.variant]
        ax.errorbar(
            xs, ys, yerr=[below, above], fmt="o-", color=color, ecolor=color, elinewidth=1.8,
            capsize=4, markersize=5, linewidth=1.2, label=s.variant, zorder=3,
        )  # fmt: skip
        for c in s.found:
            x = labels.index(c.after) - 0.5
            verdict_color = VERDICT_COLORS[c.point.verdict]
            ax.axvline(x, color=verdict_color, linestyle="--", linewidth=1.3, zorder=2)
            text = change_size(c, metric.unit) + (f" ({s.variant})" if len(series) > 1 else "")
            ax.annotate(
                text,
                xy=(x, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(4, -4 - 13 * stacked),
                textcoords="offset points",
                ha="left",
                va="top",
                fontsize=8,
                color=verdict_color,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
            )
            stacked += 1
    ax.set_xticks(
        range(len(labels)),
        labels=labels,
        rotation=35 if long else 0,
        ha="right" if long else "center",
    )
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xlabel("version")
    ax.set_ylabel(f"{metric.name} ({unit})" if unit else metric.name)
    ax.yaxis.set_major_formatter(FuncFormatter(tick))
    ax.margins(y=0.18)
    if len(series) > 1:
        ax.legend(loc="lower right", frameon=False)
    fig.suptitle(title, x=0.01, ha="left")
    return fig


def _half(x: float) -> float:
    """An error bar's half-width; 0 where the interval is undefined (one run)."""
    return x if math.isfinite(x) else 0.0
