"""Latency spectra: latency against percentile on a "nines" axis, read off the stored
HDR histograms (merged runs bold, each run thin), a panel per cell."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from perflab.report.plots.axes import MAX_COLS, MAX_PANELS, cell_title, grid, log_worthy, tick
from perflab.report.rundata import Spectrum

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
    fig, axes = grid(len(cells), panel_w=4.4, panel_h=2.9, extra_h=0.3)
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
        if log_worthy(ys):
            ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(tick))
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
