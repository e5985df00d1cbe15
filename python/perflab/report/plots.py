"""The report's plots (matplotlib, Agg, no pyplot state): each function returns a Figure.

Every plot draws numbers already computed — comparisons and summaries from
`CompareResult`, per-run values and histogram spectra from `RunData` — never a new
statistic. Variant colours come from one mapping (`palette.variant_colors`) so a variant
is the same colour everywhere; axes carry units; text is sized and laid out with
constrained layout so that labels do not overlap. `render` turns a figure into SVG or
PNG bytes under the report's style.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, Formatter, FuncFormatter, NullLocator

from perflab.analysis.compare import CompareResult
from perflab.report.format import tldr_text
from perflab.report.palette import VERDICT_COLORS
from perflab.report.rundata import RunData, RunPoint, Spectrum
from perflab.stats import Verdict
from perflab.store import MetricDef

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

FORMATS = ("svg", "png")

STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 10.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d8dde3",
    "grid.linewidth": 0.6,
    "axes.edgecolor": "#57606a",
    "axes.titleweight": "bold",
    "text.parse_math": False,  # a "$" in a name or label is text, never mathtext
    "svg.fonttype": "path",  # text as outlines: identical everywhere, no font needed
    "svg.hashsalt": "perflab",  # stable element ids: the same data gives the same file
    "figure.facecolor": "white",
}

#: Widest figure (inches); panels wrap onto rows beyond this many columns.
WIDTH = 9.0
MAX_COLS = 3
MAX_PANELS = 24


def render(make: Callable[[], Figure], fmt: str = "svg", dpi: int = 144) -> bytes:
    """Draw a figure under the report style and return it as ``fmt`` bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"plot format {fmt!r}: use one of {', '.join(FORMATS)}")
    with rc_context(STYLE):
        fig = make()
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()


# ----- axes helpers ---------------------------------------------------------------------------


def _tick(x: float, _pos: int | None = None) -> str:
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e4:
        return f"{x:,.0f}"
    if ax >= 1e-3:
        return f"{x:.4g}"
    return f"{x:.2e}"


def _pct_tick(x: float, _pos: int | None = None) -> str:
    if x == 0:
        return "0"
    return f"{x:+,.0f}%" if abs(x) >= 100 else f"{x:+.3g}%"


def value_formatter(unit: str) -> Formatter:
    """Tick labels: SI prefixes for seconds and bytes (``10 µs``), plain numbers otherwise."""
    if unit in ("s", "B", "Hz"):
        return EngFormatter(unit=unit, sep="\u2009")
    return FuncFormatter(_tick)


def axis_label(m: MetricDef) -> str:
    return f"{m.name} ({m.unit})" if m.unit else m.name


def _grid(
    n: int, panel_w: float = 3.0, panel_h: float = 2.5, sharex: bool = False, extra_h: float = 0.0
) -> tuple[Figure, list[Axes]]:
    n = max(1, min(n, MAX_PANELS))
    cols = min(n, MAX_COLS)
    rows = math.ceil(n / cols)
    width = min(WIDTH, max(5.0, panel_w * cols))
    fig = Figure(figsize=(width, panel_h * rows + extra_h), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _log_worthy(values: Sequence[float]) -> bool:
    v = [x for x in values if math.isfinite(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= 20


def cell_title(key: str) -> str:
    return "" if key in ("", "-") else key


# ----- relative change (the TLDR as a picture) ------------------------------------------------


def relative_change(result: CompareResult, metric: MetricDef, colors: dict[str, str]) -> Figure:
    """Each cell's relative change vs the baseline with its interval; 0 = no change."""
    data = result.dataset
    many = len(result.candidates) > 1
    by_key = {
        (c.cell_key, c.variant): c for c in result.comparisons if c.metric.name == metric.name
    }
    rows = [(key, v) for key, _ in data.cells for v in result.candidates]
    labels = []
    for key, v in rows:
        name = cell_title(key)
        labels.append(f"{name} · {v}" if many and name else (name or v))
    fig = Figure(figsize=(WIDTH, 1.25 + 0.42 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    bounds = [0.0]
    for y, (key, v) in enumerate(rows):
        c = by_key.get((key, v))
        k = c.comparison if c else None
        text = tldr_text(k, c.verdict, c.metric.unit) if c else "n/a"
        if c is not None and c.verdict in (Verdict.BETTER, Verdict.WORSE):
            text += f" {c.verdict.value}"
        color = VERDICT_COLORS[c.verdict] if c else "#57606a"
        if (
            k is not None and k.defined and k.scale != "absolute"
        ):  # the axis is in %; the text says it
            est, lo, hi = k.estimate * 100, k.low * 100, k.high * 100
            bounds += [lo, hi]
            ax.errorbar(
                [est],
                [y],
                xerr=[[est - lo], [hi - est]],
                fmt="o",
                color=colors[v],
                ecolor=colors[v],
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
            color=color,
            fontsize=8.5,
            annotation_clip=False,
            fontweight="bold" if c and c.verdict in (Verdict.BETTER, Verdict.WORSE) else "normal",
        )
    ax.axvline(0, color="#24292f", linewidth=1.0, zorder=2)
    if result.threshold > 0:
        t = result.threshold * 100
        ax.axvspan(-t, t, color="#eaeef2", zorder=1, label=f"±{t:g}% noise threshold")
        bounds += [-t, t]
    lo, hi = min(bounds), max(bounds)
    pad = max((hi - lo) * 0.12, 0.5)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), labels)
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_formatter(FuncFormatter(_pct_tick))
    vs = (
        f"{result.candidates[0]} vs {data.baseline}"
        if not many
        else f"each variant vs {data.baseline}"
    )
    ax.set_xlabel(
        f"relative change of the mean of {metric.name} ({result.confidence:.0%} CI, {vs})"
    )
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
    fig.suptitle(f"{metric.name}: change vs {data.baseline}", x=0.01, ha="left")
    return fig


# ----- distributions of runs ------------------------------------------------------------------


def distribution(result: CompareResult, metric: MetricDef, colors: dict[str, str]) -> Figure:
    """Every run as a point per variant, beside the mean and its interval; a panel per cell."""
    data = result.dataset
    summaries = {
        (s.cell_key, s.variant): s.summary for s in result.summaries if s.metric.name == metric.name
    }
    cells = data.cells[:MAX_PANELS]
    fig, axes = _grid(len(cells), panel_w=max(2.6, 0.9 * len(data.variants) + 1.0), panel_h=2.7)
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
            s = summaries.get((key, v))
            if s is not None:
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


# ----- runs in execution order ----------------------------------------------------------------


def run_order(
    result: CompareResult, runs: RunData, metric: MetricDef, colors: dict[str, str]
) -> Figure:
    """Values against execution order, coloured by variant: drift and warm-up effects show."""
    data = result.dataset
    cells = data.cells[:MAX_PANELS]
    fig, axes = _grid(len(cells), panel_w=4.4, panel_h=2.4, sharex=True, extra_h=0.3)
    by_cell: dict[str, list[RunPoint]] = {}
    for r in runs.runs:
        if metric.name in r.values:
            by_cell.setdefault(r.cell_key, []).append(r)
    for ax, (key, _labels) in zip(axes, cells):
        pts = by_cell.get(key, [])
        for v in data.variants:
            measured = [
                (r.position, r.values[metric.name]) for r in pts if r.variant == v and not r.warmup
            ]
            warm = [(r.position, r.values[metric.name]) for r in pts if r.variant == v and r.warmup]
            if measured:
                xs, ys = zip(*measured)
                ax.plot(xs, ys, "-", color=colors[v], linewidth=0.7, alpha=0.45, zorder=2)
                ax.scatter(xs, ys, s=14, color=colors[v], linewidths=0, zorder=3)
            if warm:
                xs, ys = zip(*warm)
                ax.scatter(
                    xs, ys, s=18, facecolors="none", edgecolors=colors[v], linewidths=1.0, zorder=3
                )
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
    handles = [
        Line2D([], [], marker="o", linestyle="-", linewidth=0.7, color=colors[v], label=v)
        for v in data.variants
    ]
    if any(r.warmup for r in runs.runs):
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
    fig.suptitle(f"{metric.name} in the order the runs ran", x=0.01, ha="left")
    return fig


# ----- latency spectra ------------------------------------------------------------------------

_NINES_TICKS = [
    (math.log10(2), "p50"),
    (1.0, "p90"),
    (2.0, "p99"),
    (3.0, "p99.9"),
    (4.0, "p99.99"),
    (5.0, "p99.999"),
    (6.0, "p99.9999"),
]


def spectrum(
    phase: str,
    spectra: list[Spectrum],
    variants: list[str],
    cells: list[str],
    colors: dict[str, str],
) -> Figure:
    """Latency against percentile on a "nines" axis: merged runs bold, each run thin."""
    by = {(s.cell_key, s.variant): s for s in spectra if s.phase == phase}
    cells = [c for c in cells if any((c, v) in by for v in variants)][:MAX_PANELS]
    fig, axes = _grid(len(cells), panel_w=4.4, panel_h=2.9, extra_h=0.3)
    for ax, key in zip(axes, cells):
        top = 0.0
        ys: list[float] = []
        for v in variants:
            s = by.get((key, v))
            if s is None:
                continue
            for run in s.per_run:
                ax.plot(
                    s.nines[: len(run)], run, color=colors[v], linewidth=0.6, alpha=0.3, zorder=2
                )
            ax.plot(s.nines, s.merged, color=colors[v], linewidth=2.0, zorder=3)
            top = max(top, s.nines[-1])
            ys += [y for y in s.merged if math.isfinite(y)]
        ticks = [(x, t) for x, t in _NINES_TICKS if x <= top + 1e-9]
        ax.set_xticks([x for x, _ in ticks], [t for _, t in ticks])
        if len(ticks) > 5 and len(cells) >= MAX_COLS:  # narrow panels: keep the labels apart
            ax.tick_params(axis="x", labelrotation=30)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(0, max(top, 1.0))
        if _log_worthy(ys):
            ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        ax.set_title(cell_title(key))
    for i, ax in enumerate(axes):
        if i % MAX_COLS == 0:
            ax.set_ylabel("latency (ms)")
        if i >= len(axes) - MAX_COLS:
            ax.set_xlabel("percentile (p99.9 = 99.9%; log scale of nines)")
    handles = [
        Line2D([], [], color=colors[v], linewidth=2.0, label=v)
        for v in variants
        if any(s.variant == v for s in by.values())
    ]
    handles.append(Line2D([], [], color="#57606a", linewidth=0.6, alpha=0.5, label="one run"))
    fig.legend(
        handles=handles, loc="outside lower center", ncols=min(len(handles), 5), frameon=False
    )
    fig.suptitle(
        f"latency by percentile, phase {phase} (all requests of all measured runs merged)",
        x=0.01,
        ha="left",
    )
    return fig


# ----- metric against a numeric matrix parameter ----------------------------------------------


def scaling(
    result: CompareResult,
    param: str,
    values: dict[str, float],
    metric: MetricDef,
    colors: dict[str, str],
    max_groups: int = 4,
) -> Figure:
    """Mean with its CI band against the parameter (left) and the relative change (right),
    one row per combination of the other matrix parameters."""
    data = result.dataset
    others = [p for p in data.params if p != param]
    groups: dict[tuple[str, ...], list[tuple[float, str, str]]] = {}
    for key, labels in data.cells:
        if labels.get(param) not in values:
            continue
        g = tuple(f"{p}={labels.get(p, '')}" for p in others)
        groups.setdefault(g, []).append((values[labels[param]], labels[param], key))
    items = list(groups.items())[:max_groups]
    summaries = {
        (s.cell_key, s.variant): s.summary for s in result.summaries if s.metric.name == metric.name
    }
    comps = {
        (c.cell_key, c.variant): c.comparison
        for c in result.comparisons
        if c.metric.name == metric.name
    }
    fig = Figure(figsize=(WIDTH, 0.5 + 2.9 * len(items)), layout="constrained")
    axes = fig.subplots(len(items), 2, squeeze=False)
    xs_all = sorted(set(values.values()))
    logx = _log_worthy(xs_all)
    for row, (g, pts) in enumerate(items):
        pts.sort()
        ax, axr = axes[row]
        means_all = []
        for v in data.variants:
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
        axr.axhline(0, color="#24292f", linewidth=1.0)
        for a in (ax, axr):
            if logx:
                a.set_xscale("log")
            a.set_xticks([x for x, _l, _k in pts], [label for _x, label, _k in pts])
            a.xaxis.set_minor_locator(NullLocator())
            a.set_xlabel(param)
        if _log_worthy(means_all):
            ax.set_yscale("log")
        ax.yaxis.set_major_formatter(value_formatter(metric.unit))
        axr.yaxis.set_major_formatter(FuncFormatter(_pct_tick))
        ax.set_ylabel(axis_label(metric))
        axr.set_ylabel(f"change vs {data.baseline} (%)")
        suffix = f" — {', '.join(g)}" if g else ""
        ax.set_title(f"mean, {result.confidence:.0%} CI band{suffix}")
        axr.set_title(f"relative change, {result.confidence:.0%} CI band{suffix}")
        if row == 0 and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", frameon=False)
    fig.suptitle(f"{metric.name} against {param}", x=0.01, ha="left")
    return fig
