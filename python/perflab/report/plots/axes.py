"""What every plot of the report shares: the panel grid, tick labels, axis labels."""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, Formatter, FuncFormatter

from perflab.records import MetricDef

#: Widest figure (inches); panels wrap onto rows beyond this many columns.
WIDTH = 9.0
MAX_COLS = 3
MAX_PANELS = 24


def tick(x: float, _pos: int | None = None) -> str:
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1e4:
        return f"{x:,.0f}"
    if ax >= 1e-3:
        return f"{x:.4g}"
    return f"{x:.2e}"


def pct_tick(x: float, _pos: int | None = None) -> str:
    if x == 0:
        return "0"
    return f"{x:+,.0f}%" if abs(x) >= 100 else f"{x:+.3g}%"


def value_formatter(unit: str) -> Formatter:
    """Tick labels: SI prefixes for seconds and bytes (``10 µs``), plain numbers otherwise."""
    if unit in ("s", "B", "Hz"):
        return EngFormatter(unit=unit, sep="\u2009")
    return FuncFormatter(tick)


def axis_label(m: MetricDef) -> str:
    return f"{m.name} ({m.unit})" if m.unit else m.name


def grid(
    n: int, panel_w: float = 3.0, panel_h: float = 2.5, sharex: bool = False, extra_h: float = 0.0
) -> tuple[Figure, list[Axes]]:
    """A figure of ``n`` panels (at most `MAX_PANELS`), `MAX_COLS` to a row."""
    n = max(1, min(n, MAX_PANELS))
    cols = min(n, MAX_COLS)
    rows = math.ceil(n / cols)
    width = min(WIDTH, max(5.0, panel_w * cols))
    fig = Figure(figsize=(width, panel_h * rows + extra_h), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=sharex).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def log_worthy(values: Sequence[float]) -> bool:
    v = [x for x in values if math.isfinite(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= 20


def cell_title(key: str) -> str:
    return "" if key in ("", "-") else key
