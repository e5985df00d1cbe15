"""A metric against a numeric matrix parameter: the mean with its CI band (left) and the
relative change against the baseline (right), a row per combination of the other
parameters."""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from perflab.analysis.comparison_table import ComparisonTable
from perflab.records import MetricDef
from perflab.report.plots.axes import WIDTH, axis_label, log_worthy, pct_tick, value_formatter

#: The cells of one row of panels, by the parameter's value: (value, label, cell key).
_Points = list[tuple[float, str, str]]


def scaling(
    result: ComparisonTable,
    param: str,
    values: dict[str, float],
    metric: MetricDef,
    colors: dict[str, str],
    max_groups: int = 4,
) -> Figure:
    """Mean with its CI band against the parameter (left) and the relative change (right),
    one row per combination of the other matrix parameters."""
    items = list(_groups(result, param, values).items())[:max_groups]
    fig = Figure(figsize=(WIDTH, 0.5 + 2.9 * len(items)), layout="constrained")
    axes = fig.subplots(len(items), 2, squeeze=False)
    logx = log_worthy(sorted(set(values.values())))
    for row, (g, pts) in enumerate(items):
        pts.sort()
        ax, axr = axes[row]
        means_all = _draw_means(ax, result, metric, pts, colors)
        _draw_changes(axr, result, metric, pts, colors)
        axr.axhline(0, color="#24292f", linewidth=1.0)
        for a in (ax, axr):
            if logx:
                a.set_xscale("log")
            a.set_xticks([x for x, _l, _k in pts], [label for _x, label, _k in pts])
            a.xaxis.set_minor_locator(NullLocator())
            a.set_xlabel(param)
        if log_worthy(means_all):
            ax.set_yscale("log")
        ax.yaxis.set_major_formatter(value_formatter(metric.unit))
        axr.yaxis.set_major_formatter(FuncFormatter(pct_tick))
        ax.set_ylabel(axis_label(metric))
        axr.set_ylabel(f"change vs {result.dataset.baseline} (%)")
        suffix = f" — {', '.join(g)}" if g else ""
        ax.set_title(f"mean, {result.confidence:.0%} CI band{suffix}")
        axr.set_title(f"relative change, {result.confidence:.0%} CI band{suffix}")
        if row == 0 and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", frameon=False)
    fig.suptitle(f"{metric.name} against {param}", x=0.01, ha="left")
    return fig


def _groups(
    result: ComparisonTable, param: str, values: dict[str, float]
) -> dict[tuple[str, ...], _Points]:
    """The cells with a numeric value of ``param``, grouped by the other parameters' labels."""
    data = result.dataset
    others = [p for p in data.params if p != param]
    groups: dict[tuple[str, ...], _Points] = {}
    for key, labels in data.cells:
        if labels.get(param) not in values:
            continue
        g = tuple(f"{p}={labels.get(p, '')}" for p in others)
        groups.setdefault(g, []).append((values[labels[param]], labels[param], key))
    return groups


def _draw_means(
    ax: Axes, result: ComparisonTable, metric: MetricDef, pts: _Points, colors: dict[str, str]
) -> list[float]:
    """Each variant's mean and CI band; returns every mean drawn (for a log y axis)."""
    summaries = {
        (s.cell_key, s.variant): s.summary for s in result.summaries if s.metric.name == metric.name
    }
    means_all = []
    for v in result.dataset.variants:
        xs, m, lo, hi = [], [], [], []
        for x, _label, key in pts:
            s = summaries.get((key, v))
            if s is None:
                continue
            xs.append(x)
            m.append(s.mean)
            lo.append(s.ci_low if math.isfinite(s.ci_low) else s.mean)
            hi.append(s.ci_high if math.isfinite(s.ci_high) else s.mean)
        if xs:
            ax.fill_between(xs, lo, hi, color=colors[v], alpha=0.2, linewidth=0)
            ax.plot(xs, m, "o-", color=colors[v], markersize=4, linewidth=1.5, label=v)
            means_all += m
    return means_all


def _draw_changes(
    axr: Axes, result: ComparisonTable, metric: MetricDef, pts: _Points, colors: dict[str, str]
) -> None:
    """Each candidate's relative change (in %) and its interval band."""
    comps = {
        (c.cell_key, c.variant): c.comparison
        for c in result.comparisons
        if c.metric.name == metric.name
    }
    for cand in result.candidates:
        xs, est, lo, hi = [], [], [], []
        for x, _label, key in pts:
            k = comps.get((key, cand))
            if k is None or not k.defined or k.scale == "absolute":  # not on a % axis
                continue
            xs.append(x)
            est.append(k.estimate * 100)
            lo.append(k.low * 100)
            hi.append(k.high * 100)
        if xs:
            axr.fill_between(xs, lo, hi, color=colors[cand], alpha=0.2, linewidth=0)
            axr.plot(xs, est, "o-", color=colors[cand], markersize=4, linewidth=1.5, label=cand)
