"""Numbers, percentages and intervals as text, shared by every reporter."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from perflab.stats import Comparison, Verdict


def fmt_number(x: float | None, digits: int = 4) -> str:
    """Readable at a glance: 48,551 · 812.3 · 8.435 · 0.00469 (≥ ``digits`` significant digits)."""
    if x is None or x != x:  # (x != x: NaN)
        return "–"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 10**digits:
        return format(x, ",.0f")
    if ax >= 1e-4:
        decimals = max(0, digits - 1 - math.floor(math.log10(ax)))
        return format(x, _GROUPED[decimals] if decimals < 12 else f",.{decimals}f")
    return f"{x:.{digits - 1}e}"


#: The format specs of `fmt_number` (made once: a summary table formats ~50,000 numbers).
_GROUPED = [f",.{d}f" for d in range(12)]


def fmt_numbers(xs: Iterable[float]) -> list[str]:
    """`fmt_number` of each (4 digits), the same texts, formatted natively at once
    (crates/text): a summary table formats ~50,000 numbers, 0.16 µs each by ``format``."""
    from perflab import _native

    return _native.fmt_numbers([float(x) for x in xs])


def fmt_pct_interval(c: Comparison, decimals: int = 1, unit: str = "") -> str:
    """The MGLRU report's TLDR cell: ``+[12.2, 16.2]%``, ``-[20.0, 23.0]%`` (magnitudes ascending).

    More decimals are used when the bounds would otherwise print equal. An interval
    straddling zero is written ``[-0.9, +0.1]%``; a TLDR shows ``NS`` for it instead.
    A dagger marks Fieller's ratio interval (see stats/welch.py, ``interval="auto"``).
    On the absolute scale (a baseline within its own noise of zero has no percentage) the
    bounds are in the metric's unit: ``+[1.2, 4.5] ms`` (the warning `absolute_change` says why).
    """
    if getattr(c, "scale", "ratio") == "absolute":
        lo_a, hi_a, u = c.low, c.high, f" {unit}" if unit else " (abs.)"
        if lo_a > 0:
            return f"+[{fmt_number(lo_a)}, {fmt_number(hi_a)}]{u}"
        if hi_a < 0:
            return f"-[{fmt_number(-hi_a)}, {fmt_number(-lo_a)}]{u}"
        return f"[{fmt_number(lo_a)}, {fmt_number(hi_a)}]{u}"
    lo, hi = c.low * 100, c.high * 100
    while decimals < 4 and round(lo, decimals) == round(hi, decimals) and lo != hi:
        decimals += 1  # keep the bounds distinguishable
    mark = "†" if getattr(c, "interval", None) == "fieller" else ""
    if lo > 0:
        return f"+[{lo:.{decimals}f}, {hi:.{decimals}f}]%{mark}"
    if hi < 0:
        return f"-[{-hi:.{decimals}f}, {-lo:.{decimals}f}]%{mark}"
    return f"[{lo:+.{decimals}f}, {hi:+.{decimals}f}]%{mark}"


def fmt_pct(x: float, decimals: int = 1) -> str:
    return f"{x * 100:+.{decimals}f}%"


def tldr_text(c: Comparison | None, verdict: Verdict, unit: str = "") -> str:
    """What a TLDR cell says: NS, an interval, "~0" within the noise threshold, or n/a.
    ``unit``: the metric's, for a change on the absolute scale."""
    if c is None or verdict is Verdict.UNDEFINED:
        return "n/a"
    if verdict is Verdict.NOT_SIGNIFICANT:
        return "NS"
    if verdict is Verdict.WITHIN_NOISE:
        return f"{fmt_pct_interval(c, unit=unit)} (within noise)"
    return fmt_pct_interval(c, unit=unit)


def arrow(better: str) -> str:
    return "↑" if better == "higher" else "↓"


def metric_header(name: str, unit: str, better: str) -> str:
    return f"{name}{f' ({unit})' if unit else ''} {arrow(better)}"


def describe_repetitions(value: object) -> str:
    """A stored design's repetitions: ``10 repetitions`` or ``adaptive 5…50 repetitions (±1%)``."""
    if isinstance(value, dict):
        return (
            f"adaptive {value.get('min')}…{value.get('max')} repetitions "
            f"(until ±{float(value.get('target_ci', 0)):.2%})"
        )
    return f"{value} repetitions"


#: Time units a metric may carry, in seconds; per-unit costs are re-scaled among them.
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
_TIME_STEPS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("ps", 1e-12))


#: Units an SI prefix may go before (values of other units keep theirs, in `fmt_sig`).
_SI_UNITS = frozenset(
    {"B", "bit", "Hz", "W", "J", "/s", "B/s", "bit/s", "ops/s", "op/s", "req/s", "ops", "cycles"}
)
_SI_STEPS = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))
_SI_SMALL = (("m", 1e-3), ("µ", 1e-6), ("n", 1e-9), ("p", 1e-12))


def readable_unit(unit: str, magnitude: float) -> tuple[str, float]:
    """(unit to print, factor to multiply values by) so that a value of ``magnitude`` (in
    ``unit``) reads between 1 and 1000: 3.4e-8 s → ("ns", 1e9), 2.5e9 B → ("GB", 1e-9).
    Times step among s … ps; a unit of `_SI_UNITS` takes an SI prefix; others are kept
    (factor 1: `fmt_sig` writes their extremes in scientific notation)."""
    if not (math.isfinite(magnitude) and magnitude > 0):
        return unit, 1.0
    if unit in _TIME_UNITS:
        seconds = magnitude * _TIME_UNITS[unit]
        for name, size in _TIME_STEPS:
            if seconds >= size:
                return name, _TIME_UNITS[unit] / size
        return "ps", _TIME_UNITS[unit] / 1e-12
    if unit in _SI_UNITS:
        small = () if unit in ("ops", "cycles") else _SI_SMALL  # no milli-operations
        for prefix, size in _SI_STEPS + small:
            if magnitude >= size:
                return prefix + unit, 1 / size
        return (small[-1][0] + unit, 1 / small[-1][1]) if small else (unit, 1.0)
    return unit, 1.0


def fmt_sig(x: float | None, digits: int = 4) -> str:
    """`fmt_number` between 0.001 and 1,000,000; beyond, scientific notation with ``digits``
    significant digits (``1.235e12``, ``4.560e-9``): readable at any magnitude."""
    if x is None or not math.isfinite(x) or x == 0 or 1e-3 <= abs(x) < 1e6:
        return fmt_number(x, digits) if x is None or not math.isinf(x) else ("∞" if x > 0 else "-∞")
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def fmt_estimate(value: float, low: float, high: float, factor: float = 1.0) -> str:
    """``34.00 [33.24, 34.79]`` (values × ``factor``, `fmt_sig`); the value alone when the
    interval is undefined."""
    if math.isnan(low) or math.isnan(high):
        return fmt_sig(value * factor)
    return f"{fmt_sig(value * factor)} [{fmt_sig(low * factor)}, {fmt_sig(high * factor)}]"


def fmt_cost_change(
    estimate: float,
    low: float,
    high: float,
    verdict: Verdict | None,
    better: str,
    decimals: int = 1,
) -> str:
    """A per-unit cost difference (fractions) in words, as judged by ``verdict`` with the metric's
    ``better`` (the lookup-structure experiment's "5.59% degradation"):
    ``degradation 5.6% [4.9, 6.3]``,
    ``improvement 3.1% [2.0, 4.2]``, ``NS [-0.5, +1.2]%``, or ``n/a``."""
    if verdict is Verdict.UNDEFINED or math.isnan(low) or math.isnan(high):
        return "n/a"
    lo, hi = low * 100, high * 100
    while decimals < 4 and round(lo, decimals) == round(hi, decimals) and lo != hi:
        decimals += 1
    if verdict is Verdict.NOT_SIGNIFICANT:
        return f"NS [{lo:+.{decimals}f}, {hi:+.{decimals}f}]%"
    sign = 1 if estimate > 0 else -1
    a, b = sorted((sign * lo, sign * hi))
    word = "degradation" if (estimate > 0) == (better == "lower") else "improvement"
    text = f"{word} {sign * estimate * 100:.{decimals}f}% [{a:.{decimals}f}, {b:.{decimals}f}]"
    return text + (" (within noise)" if verdict is Verdict.WITHIN_NOISE else "")


def describe_overhead(source: dict[str, Any]) -> str:
    """Where a net metric's overhead came from: ``“true” run after its phase`` or ``phase calib``."""
    return (
        f"“{source['command']}” run after its phase"
        if "command" in source
        else f"phase {source['phase']}"
    )


_METHOD_NAMES = {
    "welch": "Welch",
    "mannwhitney": "Mann–Whitney",
    "bootstrap": "bootstrap",
    "paired": "paired t",
}


def method_words(method: str, comparisons: list[Comparison]) -> str:
    """Which method ran, and for ``auto`` why, in a few words: ``Welch: runs clean``,
    ``auto: Mann–Whitney (outlying runs)``, ``auto: Welch in 12, Mann–Whitney in 3
    (outlying or skewed runs)``; a pool's runs: ``auto: within each device (fixed
    effects)``."""
    pooled = [c for c in comparisons if c.method == "devices"]
    if pooled:
        ranks = sum(c.interval == "van-elteren" for c in pooled)
        how = (
            "fixed effects"
            if not ranks
            else "van Elteren's ranks"
            if ranks == len(pooled)
            else f"fixed effects in {len(pooled) - ranks}, van Elteren's ranks in {ranks}"
        )
        lead = "auto" if method == "auto" else _METHOD_NAMES.get(method, method)
        return f"{lead}: within each device ({how})"
    if method != "auto":
        return _METHOD_NAMES.get(method, method)
    used: dict[str, int] = {}
    reasons: list[str] = []
    for c in comparisons:
        used[c.method] = used.get(c.method, 0) + 1
        if c.method == "mannwhitney" and c.choice not in reasons:
            reasons.append(c.choice)
    if not used:
        return "auto"
    why = " or ".join({"outliers": "outlying", "skew": "skewed"}.get(r, r) for r in sorted(reasons))
    if len(used) == 1:
        if "welch" in used:
            return "auto: Welch, runs clean"
        return f"auto: Mann–Whitney, {why} runs"
    counts = ", ".join(
        f"{_METHOD_NAMES.get(m, m)} in {n}"
        for m, n in sorted(used.items(), key=lambda kv: kv[0] != "welch")
    )
    return f"auto: {counts} ({why} runs)"
