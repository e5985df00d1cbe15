"""The report's plots (matplotlib, Agg, no pyplot state): each function returns a Figure.

Every plot draws numbers already computed — comparisons and summaries from
`ComparisonTable`, per-run values and histogram spectra from `RunData` — never a new
statistic. Variant colours come from one mapping (`palette.variant_colors`) so a variant
is the same colour everywhere; axes carry units; text is sized and laid out with
constrained layout so that labels do not overlap. `render` turns a figure into SVG or
PNG bytes under the report's style.

One module per kind of plot: `change` (the TLDR as a picture), `runs` (distributions
and execution order), `latency` (percentile spectra), `monitors` (/proc time series), `params` (a metric against a
numeric matrix parameter); `axes` holds what they share, `style` the look and `render`.
"""

from __future__ import annotations

from perflab.report.plots.change import relative_change
from perflab.report.plots.latency import spectrum
from perflab.report.plots.monitors import monitor_panels
from perflab.report.plots.params import scaling
from perflab.report.plots.runs import distribution, run_order
from perflab.report.plots.style import FORMATS, STYLE, render

__all__ = [
    "FORMATS",
    "STYLE",
    "distribution",
    "monitor_panels",
    "relative_change",
    "render",
    "run_order",
    "scaling",
    "spectrum",
]
