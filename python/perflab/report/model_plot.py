"""Observed vs predicted rate per platform for a fitted performance model (as in the
router performance-index experiment).

Returns the image as bytes (SVG, PNG or PDF); the caller writes it. Draws only what
the fit computed: observed rates, in-sample fitted rates, leave-one-platform-out
predictions with their intervals, and predictions for new platforms.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from perflab.model import FitResult, Prediction

FORMATS = ("svg", "png", "pdf")


#: Width of one bar; a fitted platform has three side by side.
_BAR = 0.26


def render_model_plot(
    fit: FitResult,
    fmt: str = "svg",
    *,
    predictions: Sequence[Prediction] = (),
    title: str | None = None,
    rate_unit: str = "packets/s",
) -> bytes:
    """Grouped bars per platform on a log scale; whiskers are prediction intervals."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise ValueError(f"plot format {fmt!r}: use one of {', '.join(FORMATS)}")
    names = [p.platform for p in fit.platforms] + [p.platform for p in predictions]
    fig = Figure(figsize=(max(6.0, 1.3 * len(names) + 2.5), 4.5), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(names)))
    _fitted_bars(ax, fit, xs)
    if predictions:
        _prediction_bars(ax, predictions, xs[len(fit.platforms) :])
    ax.set_yscale("log")
    ax.set_xticks(xs, names, rotation=20 if len(names) > 5 else 0)
    ax.set_ylabel(f"rate ({rate_unit})")
    pct = f"{fit.confidence:.0%}"
    ax.set_title(
        title
        or (
            f"I = rate·(1/cpu + M·L/C + N): M = {fit.M:.3g}, N = {fit.N * 1e6:.3g} µs, "
            f"I = {fit.I:.3g}\nwhiskers: {pct} prediction intervals"
        ),
        fontsize=9,
    )
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    return buf.getvalue()


def _fitted_bars(ax: Axes, fit: FitResult, xs: list[int]) -> None:
    """Per fitted platform: observed, fitted with every platform, and predicted without it
    (leave-one-out, with its prediction interval)."""
    n_fit = len(fit.platforms)
    ax.bar(
        [x - _BAR for x in xs[:n_fit]],
        [p.rate for p in fit.platforms],
        _BAR,
        label="observed",
        color="#4c72b0",
    )
    ax.bar(
        xs[:n_fit],
        [p.fitted_rate for p in fit.platforms],
        _BAR,
        label="fitted (all platforms)",
        color="#55a868",
    )
    loo = {x.platform: x for x in fit.loo}
    lx: list[float] = []
    ly: list[float] = []
    lerr: list[list[float]] = [[], []]
    for x, p in zip(xs, fit.platforms):
        o = loo.get(p.platform)
        if o and math.isfinite(o.predicted):
            lx.append(x + _BAR)
            ly.append(o.predicted)
            lo = o.low if math.isfinite(o.low) else o.predicted
            hi = o.high if math.isfinite(o.high) else o.predicted
            lerr[0].append(o.predicted - lo)
            lerr[1].append(hi - o.predicted)
    if lx:
        ax.bar(
            lx,
            ly,
            _BAR,
            yerr=lerr,
            capsize=3,
            label="predicted without it (leave-one-out)",
            color="#dd8452",
            ecolor="#333333",
        )


def _prediction_bars(ax: Axes, predictions: Sequence[Prediction], xs: list[int]) -> None:
    """The new platforms' predicted rates with their prediction intervals."""
    py = [p.rate for p in predictions]
    perr = [
        [p.rate - (p.low if math.isfinite(p.low) else p.rate) for p in predictions],
        [(p.high if math.isfinite(p.high) else p.rate) - p.rate for p in predictions],
    ]
    ax.bar(
        xs,
        py,
        _BAR,
        yerr=perr,
        capsize=3,
        label="predicted (new platform)",
        color="#c44e52",
        ecolor="#333333",
    )
