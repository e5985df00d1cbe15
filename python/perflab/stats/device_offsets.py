"""How far each device of a fleet sits from the others, and which board sits apart.

Boards of one model differ by a few percent; a comparison within devices (`devices.py`,
or `paired.py` by blocks) removes that, and this reports it beside the change. Over every
variant's runs the additive model of `fixed_effects.py` (log y = device + variant + ε for
positive runs; in the unit otherwise) gives each device's **offset from the fleet's
mean** — exp(α_d − ᾱ) − 1, every device weighted equally — with its t interval, and an F
test of "the devices are alike".

**A board apart** is named in a warning ("router-3 runs 6.1% slower than the other 3 in
every variant") when, in every variant that it and another board ran (at least two), its
runs' mean differs from the mean of its siblings' (the other devices' means of that
variant) by a t-test at the comparison's level, always in the same direction, and its
offset from its siblings (α_d against their mean) is at least ``min_offset`` (2%). The
board farthest apart is named first and then leaves the siblings of the others, so that
one slow board does not make the others look fast; of two boards, the slower (or lower)
is named. Equal boards trigger it in 0–1.6% of simulated A/A experiments (2–4 boards,
10 or 30 runs per variant, six noise families); a board 6% off among four equal ones is
named in 12% / 57% / 99.7% of them at 10 / 30 / 100 runs per variant (5% noise;
tests/stats/test_device_spread.py, docs/statistics.md). The 2% guard keeps a real but
harmless 1% difference, resolved by many runs, from being reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import BoolArray, FloatArray, Values
from perflab.stats.fixed_effects import (
    AdditiveFit,
    Layout,
    fit_additive,
    fleet_contrast,
    make_layout,
)
from perflab.stats.intervals import ABSOLUTE, RATIO, RELATIVE, check_confidence
from perflab.stats.summary import as_sample, scaled
from perflab.stats.warnings import StatWarning

#: A board is named only when it sits at least this far from its siblings (a fraction).
MIN_OFFSET = 0.02


@dataclass(frozen=True)
class DeviceOffset:
    """One device's offset from the fleet's mean, every variant alike.

    device:          its label.
    runs:            its runs, of every variant.
    offset:          how far its runs sit from the mean of the devices: a fraction on the
                     ``ratio`` scale (0.06: 6% above; exp(α_d − ᾱ) − 1, never ≤ −1) and the
                     ``relative`` one (over |the baseline's fleet mean|); the metric's unit
                     on the ``absolute`` scale.
    low, high:       its interval at the spread's confidence (NaN without one).
    """

    device: str
    runs: int
    offset: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "runs": self.runs,
            "offset": self.offset,
            "low": self.low,
            "high": self.high,
        }


@dataclass(frozen=True)
class DeviceSpread:
    """The devices' offsets (in order of first appearance), on one ``scale`` (see
    `Comparison`); p_value: F test in [0, 1] of "every device alike" (NaN with one device
    or no residual degrees of freedom); df: the residual degrees of freedom; warnings:
    ``odd_device`` for a board apart, ``too_few_runs``."""

    offsets: tuple[DeviceOffset, ...]
    scale: str
    confidence: float
    p_value: float
    df: int
    warnings: tuple[StatWarning, ...] = field(default=())

    @property
    def spread(self) -> float:
        """The largest offset less the smallest (0 for one device)."""
        values = [o.offset for o in self.offsets]
        return max(values) - min(values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "offsets": [o.to_dict() for o in self.offsets],
            "scale": self.scale,
            "confidence": self.confidence,
            "p_value": self.p_value,
            "df": self.df,
            "spread": self.spread,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def device_spread(
    values: Sequence[Values],
    devices: Sequence[Sequence[str]],
    confidence: float = 0.95,
    *,
    better: str | None = None,
    min_offset: float = MIN_OFFSET,
) -> DeviceSpread:
    """The spread of the devices over every variant's runs: ``values[v]`` the runs of
    variant v (the baseline first), ``devices[v]`` the device of each. ``better``
    (``higher``/``lower``) words the warning as slower/faster; without it, lower/higher.
    Raises ValueError when a variant ran on no device the baseline also ran on."""
    check_confidence(confidence)
    samples = [as_sample(v) for v in values]
    if len(devices) != len(samples) or any(len(d) != s.size for d, s in zip(devices, samples)):
        raise ValueError("one device per run is needed")
    layout = make_layout(devices)
    raw = np.concatenate(samples)[None, :]
    positive = bool(np.all(raw > 0))
    k, unit = scaled(raw)
    fit = fit_additive(np.log(raw) if positive else unit, layout)
    d = len(layout.devices)
    t = float(special.stdtrit(fit.df, 0.5 + confidence / 2)) if fit.df > 0 else math.nan
    fleet = fleet_contrast(layout)
    base, se_base = float(fit.estimate(fleet)[0]), float(fit.se(fleet)[0])
    scale = RATIO if positive else RELATIVE if abs(base) > t * se_base else ABSOLUTE
    to_scale = _converter(scale, base, k)
    offsets = []
    for j, name in enumerate(layout.devices):
        c = np.full(d, -1.0 / d)
        c[j] += 1.0
        c = np.concatenate([c, np.zeros(layout.variants - 1)])
        est, se = float(fit.estimate(c)[0]), float(fit.se(c)[0])
        lo, hi = (est - t * se, est + t * se) if d > 1 else (math.nan, math.nan)
        runs = int((layout.device == j).sum())
        offsets.append(DeviceOffset(name, runs, to_scale(est), to_scale(lo), to_scale(hi)))
    odd = apart(fit, layout, confidence, min_offset, positive, base, better)
    warnings = [
        _odd_warning(layout, j, odd.siblings[0, j], _interval(odd, j, t, to_scale), scale, better)
        for j in np.argsort(-np.abs(odd.gap[0]))
        if odd.flags[0, j]
    ]
    if fit.df < 1:
        warnings.append(
            StatWarning(
                "too_few_runs",
                "the devices' offsets need more runs than devices + variants − 1: add runs",
                {"runs": layout.size, "devices": d},
            )
        )
    p = _f_test(fit, layout, np.log(raw) if positive else unit)
    return DeviceSpread(tuple(offsets), scale, confidence, p, fit.df, tuple(warnings))


def _converter(scale: str, base: float, k: float) -> Callable[[float], float]:
    """Working-scale offsets to the spread's scale."""
    if scale == RATIO:
        return lambda x: float(np.expm1(x))
    if scale == RELATIVE:
        return lambda x: float(x / abs(base))
    return lambda x: float(x * k)


def _f_test(fit: AdditiveFit, layout: Layout, y: FloatArray) -> float:
    """p of "every device alike": the additive model against the variants alone."""
    d = len(layout.devices)
    if d < 2 or fit.df < 1:
        return math.nan
    rss_full = float(fit.s2[0]) * fit.df
    rss_variants = 0.0
    for v in range(layout.variants):
        x = y[0, layout.variant == v]
        rss_variants += float(((x - x.mean()) ** 2).sum())
    num = max(rss_variants - rss_full, 0.0) / (d - 1)
    if rss_full == 0:
        return 0.0 if num > 0 else 1.0
    return float(special.fdtrc(d - 1, fit.df, num / (rss_full / fit.df)))


class Apart(NamedTuple):
    """The boards apart (see `apart`), each (E, D) but ``siblings`` (E, D, D): the boards
    each was compared with when it was named (all the others when it was not)."""

    flags: BoolArray
    gap: FloatArray
    se: FloatArray
    siblings: BoolArray


def apart(
    fit: AdditiveFit,
    layout: Layout,
    confidence: float,
    min_offset: float,
    positive: bool,
    base: float | FloatArray = 1.0,
    better: str | None = None,
) -> Apart:
    """The boards apart by the rule of the module docstring, for E rows of one layout, and
    each board's offset from its siblings (α_d less their mean α, on the working scale,
    with its standard error; ``base``: the fleet mean a ``relative`` guard is taken
    against). The board farthest apart is named first and leaves the siblings of the
    others, so that one odd board does not make its siblings look apart the other way (of
    two boards equally far, the slower, or the lower without ``better``)."""
    e, d = fit.device_effect.shape
    active = np.ones((e, d), bool)
    flags = np.zeros((e, d), bool)
    gap, se, siblings = np.zeros((e, d)), np.zeros((e, d)), np.zeros((e, d, d), bool)
    for _ in range(max(d - 1, 0)):
        step = [_against(fit, layout, confidence, active, j) for j in range(d)]
        g = np.stack([x[0] for x in step], axis=1)
        size = np.abs(np.expm1(g)) if positive else np.abs(g / base)
        ok = np.stack([x[2] for x in step], axis=1) & active & ~flags & (size >= min_offset)
        if not flags.any():
            gap, se = g, np.stack([x[1] for x in step], axis=1)
            siblings = active[:, None, :] & ~np.eye(d, dtype=bool)[None]
        if not ok.any():
            break
        worse = (g > 0) if better == "lower" else (g < 0)
        pick = np.argmax(np.where(ok, np.abs(g) * (1 + 1e-9 * worse), -1.0), axis=1)
        rows = np.flatnonzero(ok.any(axis=1))
        cols = pick[rows]
        flags[rows, cols] = True
        gap[rows, cols] = g[rows, cols]
        se[rows, cols] = np.stack([x[1] for x in step], axis=1)[rows, cols]
        siblings[rows, cols] = active[rows] & (np.arange(d)[None, :] != cols[:, None])
        active[rows, cols] = False
    return Apart(flags, gap, se, siblings)


def _against(
    fit: AdditiveFit, layout: Layout, confidence: float, active: BoolArray, j: int
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """(gap, se, apart) of board j against the ``active`` others, per row: α_j less their
    mean α, and whether its mean differs from theirs by a t-test in every variant that it
    and one of them ran (at least two), always in the same direction."""
    e, d = active.shape
    counts = layout.counts()
    others = active.copy()
    others[:, j] = False
    k = np.maximum(others.sum(axis=1), 1)
    t = special.stdtrit(fit.df, 0.5 + confidence / 2) if fit.df > 0 else math.nan
    tested = np.zeros(e, int)
    sign = np.zeros(e)
    every = others.any(axis=1)
    for v in range(layout.variants):
        has = others & (counts[:, v] > 0)[None, :]
        kv = has.sum(axis=1)
        use = (kv > 0) & (counts[j, v] > 0)
        m = _cell_means(fit, layout, v)
        inv = 1.0 / np.maximum(counts[:, v], 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = m[:, j] - (m * has).sum(axis=1) / kv
            s = np.sqrt(fit.s2 * (1.0 / max(counts[j, v], 1) + (inv * has).sum(axis=1) / kv**2))
            sig = np.abs(diff) > t * s
        same = (sign == 0) | (np.sign(diff) == sign)
        every &= ~use | (sig & same)
        sign = np.where(use, np.sign(diff), sign)
        tested += use
    c = np.zeros((e, d + layout.variants - 1))
    c[:, :d] = -others.astype(float) / k[:, None]
    c[:, j] = 1.0
    theta = np.concatenate([fit.device_effect, fit.variant_effect[:, 1:]], axis=1)
    gap = (theta * c).sum(axis=1)
    var = np.einsum("ep,pq,eq->e", c, fit.unscaled, c)
    return gap, np.sqrt(fit.s2 * np.maximum(var, 0.0)), every & (tested >= 2)


def _cell_means(fit: AdditiveFit, layout: Layout, v: int) -> FloatArray:
    """(E, D) each device's mean of variant v on the working scale (0 where it has none),
    from the fitted values and the residuals (the model's y, without keeping y)."""
    e, d = fit.device_effect.shape
    on = layout.variant == v
    y = (
        fit.device_effect[:, layout.device[on]]
        + fit.variant_effect[:, v : v + 1]
        + fit.residuals[:, on]
    )
    sums = np.zeros((e, d))
    np.add.at(sums.T, layout.device[on], y.T)
    n = np.bincount(layout.device[on], minlength=d)
    out: FloatArray = sums / np.maximum(n, 1)
    return out


def _interval(
    odd: Apart, j: int, t: float, to_scale: Callable[[float], float]
) -> tuple[float, float, float]:
    """Board j's offset from its siblings, and its interval, on the spread's scale."""
    g, s = float(odd.gap[0, j]), float(odd.se[0, j])
    return to_scale(g), to_scale(g - t * s), to_scale(g + t * s)


def _odd_warning(
    layout: Layout,
    j: int,
    siblings: BoolArray,
    gap: tuple[float, float, float],
    scale: str,
    better: str | None,
) -> StatWarning:
    """The sentence for board j: ``gap`` (offset, low, high) from ``siblings`` on the
    spread's scale."""
    name, d = layout.devices[j], len(layout.devices)
    names = [layout.devices[i] for i in np.flatnonzero(siblings)]
    others = names[0] if len(names) == 1 else f"the other {len(names)}"
    if 1 < len(names) < d - 1:
        others += f" ({', '.join(names)})"
    x = gap[0]
    size = f"{abs(x):.0%}" if abs(x) >= 0.1 else f"{abs(x):.1%}"
    if scale == ABSOLUTE:
        size = f"{abs(x):.3g} (in the metric's unit)"
    if better in ("higher", "lower"):
        slower = (x < 0) == (better == "higher")
        said = f"{name} runs {size} {'slower' if slower else 'faster'} than {others}"
    else:
        said = f"{name}'s runs are {size} {'lower' if x < 0 else 'higher'} than {others}'s"
    return StatWarning(
        "odd_device",
        f"{said} in every variant: the change is measured within each device, so this does not "
        "bias it; check that board (clock, firmware, cooling, hardware revision) or leave it "
        "out of the pool",
        {"device": name, "offset": x, "low": gap[1], "high": gap[2], "siblings": len(names)},
    )
