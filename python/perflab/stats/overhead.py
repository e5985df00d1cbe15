"""Overhead subtraction: remove a separately measured harness cost from a time metric.

The lookup-structure experiment measured the cost of its random() calls in a run of their own
and reported lookup times net of it; hyperfine subtracts the mean time of an empty shell
command. perflab measures the overhead command (or phase) in the same interleaved schedule and
subtracts its mean, propagating its uncertainty instead of treating it as exact:

- one variant: net mean = mean(measured) − mean(overhead), with Welch's interval of
  that difference (the overhead sample's noise widens it);
- two variants: the relative change of net times, (m_b − m_o)/(m_a − m_o) − 1, by
  Fieller's interval with the covariance both net times share through m_o (defined as
  for every method: a ratio when both net means are positive, else the difference over
  |baseline net time|, or in the unit when that is within noise of zero).

Assumption: overhead and measured runs are independent and the overhead adds to the
measured time (it is part of each measured run, not overlapped with the work).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray
from perflab.stats.fieller import (
    component_p_value,
    fieller_positive,
    log_ratio,
    stand_in,
    stand_in_warning,
)
from perflab.stats.intervals import (
    Intervals,
    check_confidence,
    note_warnings,
    pow2_scale,
    reconcile,
)
from perflab.stats.summary import as_sample
from perflab.stats.types import Comparison
from perflab.stats.warnings import StatWarning

#: Overhead above this share of the measured mean makes the net time imprecise: warn.
DOMINANT_SHARE = 0.5


@dataclass(frozen=True)
class NetTime:
    """A time metric net of an overhead, in the metric's unit.

    mean, low, high:  net mean and its ``confidence`` interval (Welch, both samples' noise).
    measured_mean, overhead_mean, overhead_sd: inputs' means / sd, same unit.
    overhead_share:   overhead_mean / measured_mean, a fraction.
    corrected:        each measured run minus the overhead mean (hyperfine-style per-run
                      values; their spread omits the overhead's uncertainty, the interval
                      above includes it).
    """

    n: int
    n_overhead: int
    confidence: float
    mean: float
    low: float
    high: float
    measured_mean: float
    overhead_mean: float
    overhead_sd: float
    overhead_share: float
    corrected: tuple[float, ...]
    warnings: tuple[StatWarning, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "n_overhead": self.n_overhead,
            "confidence": self.confidence,
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "measured_mean": self.measured_mean,
            "overhead_mean": self.overhead_mean,
            "overhead_sd": self.overhead_sd,
            "overhead_share": self.overhead_share,
            "corrected": list(self.corrected),
            "warnings": [w.to_dict() for w in self.warnings],
        }


def _welch(a: FloatArray, b: FloatArray, confidence: float) -> tuple[float, float]:
    """(half-width of Welch's interval of mean(b) − mean(a), its df); any magnitude."""
    k = float(pow2_scale(a[None, :], b[None, :])[0])
    va = float((a / k).var(ddof=1)) / a.size
    vb = float((b / k).var(ddof=1)) / b.size
    if va + vb == 0:
        return 0.0, 0.0
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(special.stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(va + vb) * k, df


def _share_warnings(measured: float, overhead: float, net_low: float) -> list[StatWarning]:
    out = []
    share = overhead / measured if measured else math.inf
    if share > DOMINANT_SHARE:
        out.append(
            StatWarning(
                "overhead_dominates",
                f"the overhead is {share:.0%} of the measured time, so the net time is "
                "imprecise: do more work per run (more iterations) so that it dominates",
                {"share": share},
            )
        )
    if not net_low > 0:
        out.append(
            StatWarning(
                "overhead_indistinguishable",
                "the measured time is not significantly above the overhead: the work is "
                "too small to measure this way; do more work per run",
                {"net_low": net_low},
            )
        )
    return out


def subtract_overhead(
    values: Sequence[float], overhead: Sequence[float], confidence: float = 0.95
) -> NetTime:
    """Net time of ``values`` after subtracting the mean of ``overhead`` runs (≥ 2 each)."""
    confidence = check_confidence(confidence)
    x = as_sample(values)
    o = as_sample(overhead)
    if x.size < 2 or o.size < 2:
        raise ValueError("need ≥ 2 measured and ≥ 2 overhead runs")
    mx, mo = float(x.mean()), float(o.mean())
    half, _ = _welch(o, x, confidence)
    net = mx - mo
    return NetTime(
        n=int(x.size),
        n_overhead=int(o.size),
        confidence=confidence,
        mean=net,
        low=net - half,
        high=net + half,
        measured_mean=mx,
        overhead_mean=mo,
        overhead_sd=float(pow2_scale(o[None, :])[0])
        * float((o / pow2_scale(o[None, :])[0]).std(ddof=1)),
        overhead_share=mo / mx if mx else math.inf,
        corrected=tuple(float(v) for v in x - mo),
        warnings=tuple(_share_warnings(mx, mo, net - half)),
    )


def compare_net(
    baseline: Sequence[float],
    candidate: Sequence[float],
    overhead: Sequence[float],
    confidence: float = 0.95,
) -> Comparison:
    """Change of net times (m_b − m_o) against (m_a − m_o), defined as for every method.

    When both net means are positive and the baseline's clearly so (``ratio``): Fieller's interval of the ratio with the
    covariance both share through m_o, on ratios > 0 (never below −100%; a finite stand-in
    where it reaches 0 or +∞, with a warning). Otherwise the difference of means over
    |m_a − m_o| (``relative``), or in the unit when the baseline's net time is within its
    own noise of zero (``absolute``). The p-value is Welch's for m_b = m_a (the overhead
    cancels from the difference), with Welch's degrees of freedom for the interval too, so
    that interval and p-value agree at every level."""
    confidence = check_confidence(confidence)
    a0, b0, o0 = as_sample(baseline), as_sample(candidate), as_sample(overhead)
    if min(a0.size, b0.size, o0.size) < 2:
        raise ValueError("need ≥ 2 runs of baseline, candidate and overhead")
    k = float(pow2_scale(a0[None, :], b0[None, :], o0[None, :])[0])
    a, b, o = a0 / k, b0 / k, o0 / k
    net = _net_moments(a, b, o, confidence)
    half_den, _ = _welch(o, a, confidence)
    near0 = abs(net.den) <= half_den
    if net.den > 0 and net.num > 0 and not near0:
        change = _ratio_change(net, confidence)
    else:
        change = _difference_change(net, near0, k)
    iv = reconcile(
        Intervals(
            np.array([change.estimate]),
            np.array([change.low]),
            np.array([change.high]),
            np.array([change.p_value]),
            np.array([net.den * k]),
            np.array([net.num * k]),
            np.array([change.scale], dtype=object),
            np.array([change.interval], dtype=object),
        ),
        confidence,
    )
    warnings = _share_warnings(net.ma, net.mo, net.den - half_den) + change.warnings
    return iv.comparison(
        0,
        method="welch-net",
        confidence=confidence,
        n_baseline=int(a.size),
        n_candidate=int(b.size),
        statistic="net mean",
        warnings=tuple(warnings) + tuple(note_warnings(iv, 0)),
    )


@dataclass(frozen=True)
class _NetMoments:
    """Means and squared standard errors of the rescaled baseline, candidate and overhead
    runs, and Welch's test of m_b = m_a: degrees of freedom, t quantile, p-value."""

    ma: float
    mb: float
    mo: float
    va: float
    vb: float
    vo: float
    df: float
    t: float
    p: float

    @property
    def den(self) -> float:
        """The baseline's net mean."""
        return self.ma - self.mo

    @property
    def num(self) -> float:
        """The candidate's net mean."""
        return self.mb - self.mo

    @property
    def diff(self) -> float:
        return self.mb - self.ma

    @property
    def se(self) -> float:
        """Standard error of ``diff`` (the overhead cancels from it)."""
        return math.sqrt(self.va + self.vb)


def _net_moments(a: FloatArray, b: FloatArray, o: FloatArray, confidence: float) -> _NetMoments:
    ma, mb, mo = float(a.mean()), float(b.mean()), float(o.mean())
    va, vb, vo = (float(x.var(ddof=1)) / x.size for x in (a, b, o))
    diff = mb - ma
    q = 0.5 + confidence / 2
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va * va / (a.size - 1) + vb * vb / (b.size - 1)) if se > 0 else math.inf
    t = float(special.stdtrit(df, q)) if se > 0 else 0.0
    p = float(2 * special.stdtr(df, -abs(diff) / se)) if se > 0 else float(diff == 0)
    return _NetMoments(ma, mb, mo, va, vb, vo, df, t, p)


@dataclass(frozen=True)
class _NetChange:
    """The change of net times on one scale, its interval and p-value, and its warnings."""

    scale: str
    estimate: float
    low: float
    high: float
    p_value: float
    interval: str
    warnings: list[StatWarning]


def _ratio_change(net: _NetMoments, confidence: float) -> _NetChange:
    """Both net means positive: Fieller's interval of their ratio, with the covariance they
    share through m_o (a finite stand-in where it reaches 0 or +∞)."""
    est = net.num / net.den - 1
    if not net.se > 0:
        return _NetChange("ratio", est, est, est, net.p, "difference", [])
    args = (np.array([net.num]), np.array([net.den]), net.vb + net.vo, net.va + net.vo, net.vo)
    p = float(component_p_value(*args, net.df)[0])
    lo, hi, at_zero, at_inf = fieller_positive(*args, net.t)
    warnings = []
    if at_zero[0] or at_inf[0]:
        _, _, l_lo, l_hi = log_ratio(*args, net.df, net.t)
        lo, hi = stand_in(
            lo,
            hi,
            at_zero,
            at_inf,
            np.array([net.num / net.den]),
            np.array([p > 1 - confidence]),
            l_lo,
            l_hi,
        )
        warnings.append(stand_in_warning(bool(at_zero[0]), bool(at_inf[0]), "net time"))
    return _NetChange("ratio", est, float(lo[0]) - 1, float(hi[0]) - 1, p, "fieller", warnings)


def _difference_change(net: _NetMoments, near0: bool, k: float) -> _NetChange:
    """A net mean not positive: the difference of means over |baseline net time|, or in the
    unit (``k``: the runs' rescaling) when that is within its own noise of zero."""
    div = 1.0 if near0 else abs(net.den)
    unit = k if near0 else 1.0
    est = net.diff / div * unit
    low, high = (net.diff - net.t * net.se) / div * unit, (net.diff + net.t * net.se) / div * unit
    if near0:
        warning = StatWarning(
            "absolute_change",
            "the baseline's net time is within its own noise of zero, so a relative change "
            "would be meaningless: the change and its interval are in the metric's own unit; "
            "do more work per run",
            {"baseline_net": net.den * k},
        )
    else:
        warning = StatWarning(
            "net_not_positive",
            "a net time is not above zero, so its ratio is meaningless: the change is the "
            "difference over |baseline net time|; do more work per run",
            {"baseline_net": net.den * k, "candidate_net": net.num * k},
        )
    scale = "absolute" if near0 else "relative"
    return _NetChange(scale, est, low, high, net.p, "difference", [warning])
