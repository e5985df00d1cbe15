"""The plots' look (fonts, grid, colours of the frame) and `render`, which draws a figure
under it as SVG or PNG bytes. SVG text is drawn as outlines with a fixed hash salt, so the
same data always gives the same file."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from matplotlib import rc_context
from matplotlib.figure import Figure

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


def render(make: Callable[[], Figure], fmt: str = "svg", dpi: int = 144) -> bytes:
    """Draw a figure under the report style and return it as ``fmt`` bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"plot format {fmt!r}: use one of {', '.join(FORMATS)}")
    with rc_context(STYLE):
        fig = make()
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()
