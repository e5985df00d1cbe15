"""Colours of a report: one per variant, the same in every plot and table of it.

Variants take the Okabe–Ito colour-blind-safe palette in dataset order (the baseline
first, so it is blue in every report); green and red are kept for verdicts, so a
variant never looks "better" or "worse" by its colour alone.
"""

from __future__ import annotations

from perflab.stats import Verdict

VARIANT_COLORS = [
    "#0072B2",
    "#E69F00",
    "#CC79A7",
    "#56B4E9",
    "#7F3C8D",
    "#333333",
    "#B8860B",
    "#8C564B",
]

#: Words for the colours, for readers of a Markdown report's tables (no swatches there).
COLOR_NAMES = dict(
    zip(
        VARIANT_COLORS,
        ["blue", "orange", "pink", "sky blue", "purple", "dark grey", "ochre", "brown"],
    )
)

VERDICT_COLORS = {
    Verdict.BETTER: "#1a7f37",
    Verdict.WORSE: "#cf222e",
    Verdict.WITHIN_NOISE: "#9a6700",
    Verdict.NOT_SIGNIFICANT: "#57606a",
    Verdict.UNDEFINED: "#57606a",
}


def variant_colors(variants: list[str]) -> dict[str, str]:
    """variant → hex colour, cycling through the palette for more than eight variants."""
    return {v: VARIANT_COLORS[i % len(VARIANT_COLORS)] for i, v in enumerate(variants)}
