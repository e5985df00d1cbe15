"""Monitor time series: what /proc showed while a phase ran — page faults, reclaim,
refaults, available memory, pressure, CPU utilization, network — a row per quantity and
a panel per variant (one line per run, from the phase's start), each row on one y scale
so that variants compare at a glance."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from perflab.observe.monitor_summary import HEADLINES, headline_series
from perflab.report.monitor_runs import MonitorRuns
from perflab.report.plots.axes import WIDTH, tick

#: Most variants side by side (a figure stays readable).
MAX_VARIANTS = 4


def quantities(runs: list[MonitorRuns]) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(source, label, unit, keys) of every headline the runs have data for, in order."""
    out = []
    for source, rows in HEADLINES.items():
        for label, unit, keys in rows:
            if any(
                len(headline_series(s, source, keys)) > 0 and s.values(source)
                for r in runs
                for s in r.series
                if source in s.sources
            ):
                out.append((source, label, unit, keys))
    return out


def monitor_panels(
    phase: str, cell: str, runs: list[MonitorRuns], variants: list[str], colors: dict[str, str]
) -> Figure:
    """A row per quantity, a panel per variant: each run's series as a line."""
    mine = [r for r in runs if r.phase == phase and r.cell_key == cell]
    shown = [v for v in variants if any(r.variant == v for r in mine)][:MAX_VARIANTS]
    rows = quantities(mine)
    cols = max(1, len(shown))
    fig = Figure(
        figsize=(min(WIDTH, 2.6 + 2.4 * cols), 1.0 + 1.7 * max(1, len(rows))),
        layout="constrained",
    )
    axes = fig.subplots(max(1, len(rows)), cols, squeeze=False, sharex=True, sharey="row")
    for i, (source, label, unit, keys) in enumerate(rows):
        for j, v in enumerate(shown):
            ax = axes[i][j]
            for r in mine:
                if r.variant != v:
                    continue
                for s in r.series:
                    pts = headline_series(s, source, keys)
                    if pts:
                        xs, ys = zip(*pts)
                        ax.plot(xs, ys, color=colors.get(v, "#333"), linewidth=0.9, alpha=0.7)
            ax.yaxis.set_major_formatter(FuncFormatter(tick))
            if i == 0:
                ax.set_title(v)
            if j == 0:
                ax.set_ylabel(f"{label}\n({unit})")
            if i == len(rows) - 1:
                ax.set_xlabel("s since the phase began")
    where = f", {cell}" if cell not in ("", "-") else ""
    fig.suptitle(f"monitors of phase {phase}{where} (one line per run)", x=0.01, ha="left")
    return fig
