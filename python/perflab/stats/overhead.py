"""Overhead subtraction: remove a separately measured harness cost from a time metric.

Seed 003 measured the cost of its random() calls in a run of their own and reported
lookup times net of it; hyperfine subtracts the mean time of an empty shell command.
perflab measures the overhead command (or phase) in the same interleaved schedule and
subtracts its mean, propagating its uncertainty instead of treating it as exact:

- one variant: net mean = mean(measured) − mean(overhead), with Welch's interval of
  that difference (the overhead sample's noise widens it);
- two variants: the relative change of net times, (m_b − m_o)/(m_a − m_o) − 1, by
  Fieller's interval with the covariance both net times share through m_o.

Assumption: overhead and measured runs are independent and the overhead adds to the
measured time (it is part of each measured run, not overlapped with the work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy import special

from perflab.stats.fieller import fieller_ratio
from perflab.stats.intervals import check_confidence
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

    def to_dict(self) -> dict:
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


def _welch(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    va = float(a.var(ddof=1)) / a.size
    vb = float(b.var(ddof=1)) / b.size
    if va + vb == 0:
        return 0.0, 0.0
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(special.stdtrit(df, 0.5 + confidence / 2)) * math.sqrt(va + vb), df


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
        overhead_sd=float(o.std(ddof=1)),
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
    """Relative change of net times (m_b − m_o)/(m_a − m_o) − 1, Fieller interval.

    The p-value is Welch's for m_b = m_a (the overhead cancels from the difference)."""
    confidence = check_confidence(confidence)
    a, b, o = as_sample(baseline), as_sample(candidate), as_sample(overhead)
    if min(a.size, b.size, o.size) < 2:
        raise ValueError("need ≥ 2 runs of baseline, candidate and overhead")
    ma, mb, mo = float(a.mean()), float(b.mean()), float(o.mean())
    va, vb, vo = (float(s.var(ddof=1)) / s.size for s in (a, b, o))
    den, num = ma - mo, mb - mo
    if den == 0:
        raise ValueError("baseline net time is zero: a relative change is undefined")
    rho = num / den
    parts = [(vb, b.size), (rho * rho * va, a.size), ((1 - rho) ** 2 * vo, o.size)]
    tot = sum(v for v, _ in parts)
    denom_df = sum(v * v / (n - 1) for v, n in parts)
    df = tot * tot / denom_df if denom_df > 0 else math.inf
    t = float(special.stdtrit(df, 0.5 + confidence / 2))
    lo, hi = fieller_ratio(num, den, vb + vo, va + vo, vo, t)
    se = math.sqrt(va + vb)
    p = float(2 * special.stdtr(df, -abs(mb - ma) / se)) if se > 0 else float(mb == ma)
    warnings = _share_warnings(ma, mo, den - _welch(o, a, confidence)[0])
    if math.isnan(float(lo)):
        warnings.append(
            StatWarning(
                "ratio_unbounded",
                "the baseline's net time is not significantly above zero, so the ratio's "
                "interval is unbounded: do more work per run",
                {"baseline_net": den},
            )
        )
    return Comparison(
        method="welch-net",
        confidence=confidence,
        n_baseline=int(a.size),
        n_candidate=int(b.size),
        baseline_location=den,
        candidate_location=num,
        estimate=rho - 1,
        low=float(lo) - 1,
        high=float(hi) - 1,
        p_value=p,
        warnings=tuple(warnings),
        statistic="net mean",
        interval="fieller",
    )
