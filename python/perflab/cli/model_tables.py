"""The tables of `perflab model`: index per platform, fitted constants, predictions."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from perflab.cli.lazy_rich import Table

if TYPE_CHECKING:
    from perflab.cli.io import CliIO
    from perflab.model import FitResult, IndexTable, Observation, Prediction


def print_index(
    io: CliIO, obs: list[Observation], table: IndexTable, M: float, N: float, unit: str
) -> None:
    """I per platform for given M and N (``unit``: the memmove column's), and its spread."""
    from perflab.model.units import bytes_per_second

    per_unit = bytes_per_second(unit)
    t = Table(
        title=f"performance index I = rate × (1/cpu + M·L/C + N), M = {M:g}, N = {N * 1e6:g} µs"
    )
    for col in (
        "platform",
        "rate (pkts/s)",
        "cpu (iter/s)",
        f"C ({unit})",
        "L (B)",
        "1/cpu (µs)",
        "M·L/C (µs)",
        "N (µs)",
        "I",
    ):
        t.add_column(col, justify="left" if col == "platform" else "right")
    for o, r in zip(obs, table.rows):
        t.add_row(
            o.platform,
            f"{o.rate:,.0f}",
            f"{o.cpu:,.0f}",
            _num(o.memmove / per_unit),
            f"{o.length:g}",
            f"{o.cpu_time * 1e6:.4g}",
            f"{M * o.copy_time * 1e6:.4g}",
            f"{N * 1e6:.4g}",
            f"{r.index:.2f}",
        )
    io.console.print(t)
    io.print(f"spread of I: sd(ln I) = {table.log_sd:.1%}, max/min = {table.max_ratio:.3f}")


def print_fit(io: CliIO, res: FitResult) -> None:
    """The fitted constants with their intervals, then each platform under them."""
    pct = f"{res.confidence:.0%}"
    t = Table(
        title=f"fitted constants ({len(res.platforms)} platforms, {res.dof} degree(s) of freedom)"
    )
    for col in (
        "constant",
        "unit",
        "estimate",
        f"{pct} t interval",
        f"{pct} bootstrap (percentile)",
        "status",
    ):
        t.add_column(col, justify="left" if col in ("constant", "unit", "status") else "right")
    for name, unit, est, scale in (
        ("I", "-", res.I, 1.0),
        ("M", "-", res.M, 1.0),
        ("N", "µs/packet", res.N, 1e6),
    ):
        status = (
            "fixed"
            if name in res.fixed
            else "not identified"
            if name in res.unidentified
            else "at bound 0"
            if name in res.at_bound
            else "estimated"
        )
        t.add_row(
            name,
            unit,
            f"{est * scale:.4g}",
            _interval(res.t_intervals.get(name, (math.nan, math.nan)), scale),
            _interval(res.intervals.get(name, (math.nan, math.nan)), scale),
            status,
        )
    io.console.print(t)
    pt = Table(title="per platform")
    for col in (
        "platform",
        "rate (pkts/s)",
        "I_p",
        "fitted rate (pkts/s)",
        "residual",
        "leave-one-out prediction (pkts/s)",
        f"{pct} PI",
        "LOO error",
    ):
        pt.add_column(col, justify="left" if col == "platform" else "right")
    loo = {x.platform: x for x in res.loo}
    for p in res.platforms:
        x = loo.get(p.platform)
        pt.add_row(
            p.platform,
            f"{p.rate:,.0f}",
            _num(p.index) if p.index >= 1000 else f"{p.index:.2f}",
            f"{p.fitted_rate:,.0f}",
            f"{math.expm1(p.residual):+.1%}",
            f"{x.predicted:,.0f}" if x and math.isfinite(x.predicted) else "-",
            _interval((x.low, x.high), 1.0, ",.0f") if x else "-",
            f"{x.error:+.1%}" if x and math.isfinite(x.error) else "-",
        )
    io.console.print(pt)
    io.print(
        f"spread of I: sd(ln I) = {res.log_sd:.1%}"
        + (f"; residual sigma = {res.sigma:.1%} of rate" if math.isfinite(res.sigma) else "")
    )
    for s in res.statements:
        io.print(f"- {s}")


def print_predictions(
    io: CliIO,
    res: FitResult,
    targets: list[Observation],
    preds: list[Prediction],
    method: str,
    unit: str,
) -> None:
    """Each target's predicted rate with its interval (and the observed rate when given)."""
    from perflab.model.units import bytes_per_second

    t = Table(title=f"predicted rate ({method} {res.confidence:.0%} prediction interval)")
    for col in (
        "platform",
        "cpu (iter/s)",
        f"C ({unit})",
        "L (B)",
        "predicted (pkts/s)",
        "interval (pkts/s)",
        "observed (pkts/s)",
        "observed vs predicted",
    ):
        t.add_column(col, justify="left" if col == "platform" else "right")
    per_unit = bytes_per_second(unit)
    for tgt, p in zip(targets, preds):
        t.add_row(
            p.platform,
            f"{tgt.cpu:,.0f}",
            _num(tgt.memmove / per_unit),
            f"{tgt.length:g}",
            f"{p.rate:,.0f}",
            _interval((p.low, p.high), 1.0, ",.0f"),
            f"{tgt.rate:,.0f}" if tgt.rate else "-",
            f"{tgt.rate / p.rate - 1:+.1%}" if tgt.rate else "-",
        )
    io.console.print(t)
    for p in preds:
        if p.note:
            io.print(f"- {p.platform}: {p.note}")


def _interval(v: tuple[float, float], scale: float = 1.0, fmt: str = ".4g") -> str:
    lo, hi = v
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    return f"[{lo * scale:{fmt}}, {hi * scale:{fmt}}]"


def _num(x: float) -> str:
    """1,234,567 for large values, 4 significant digits for small ones (1.9, 0.0215)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"
