"""Diagnostics of samples and comparisons, as typed warnings that say what to do.

Each check is a pure function returning a `StatWarning` or None; `diagnose_sample` and
`diagnose_comparison` run them all. Rules and their false-alarm rates (simulated):

- outliers: modified z-score |x − median| / (1.4826·b_n·MAD) > 4.5, with Croux &
  Rousseeuw's small-sample factor b_n (≈ 3% of normal samples of 10 runs have a flag,
  ≈ 1% at 30; Iglewicz & Hoaglin's 3.5 flags 8–9% of them), from 8 runs on; or Tukey's
  far-out fences, 3·IQR beyond the quartiles (≈ 4% of normal samples of 10 runs).
  Flagged, never dropped; indices returned.
- drift: Kendall's τ of the values against their execution order, p < 0.01, and a
  Theil–Sen drift over the runs of ≥ 0.5% of the median (≈ 1% false alarms on
  independent runs).
- bimodality: the best split of the sorted runs into two groups (each ≥ 15% of runs)
  explains more of the variance than 99.5% of normal samples of the same size do
  (Monte-Carlo critical value, seeded); needs ≥ 10 runs.
- slow first run: the first run is worse than the median of the others by > 3.5
  robust standard deviations and by ≥ 2%.
- unequal variances: standard deviations differ by ≥ 3× and Levene's (Brown–Forsythe)
  test agrees (p < 0.05).
- too few runs (power-based): a comparison that found nothing, with noise that could
  not have resolved a change of the size that matters.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from perflab.stats.arrays import FloatArray, Values
from perflab.stats.power import DEFAULT_POWER, detectable_change, runs_needed
from perflab.stats.summary import as_sample
from perflab.stats.types import Comparison
from perflab.stats.warnings import Detail, StatWarning

MAD_Z = 4.5
MAD_MIN_RUNS = 8
IQR_K = 3.0
#: Croux & Rousseeuw (1992) small-sample consistency factors of the MAD (n ≤ 9; n/(n − 0.8) above).
_MAD_BN = {2: 1.196, 3: 1.495, 4: 1.363, 5: 1.206, 6: 1.200, 7: 1.140, 8: 1.129, 9: 1.107}
DRIFT_ALPHA = 0.01
DRIFT_MIN = 0.005
BIMODAL_MIN_RUNS = 10
BIMODAL_MIN_GROUP = 0.15
BIMODAL_FALSE_ALARM = 0.005
FIRST_RUN_Z = 3.5
FIRST_RUN_MIN = 0.02
SD_RATIO = 3.0


def _scipy_stats() -> ModuleType:
    """scipy.stats on use: it costs ~0.3 s to import, and most comparisons never need it."""
    return importlib.import_module("scipy.stats")


def _robust_scale(x: FloatArray) -> float:
    """1.4826·b_n·MAD, or 1.2533·mean absolute deviation when more than half the values tie."""
    n = x.size
    med = np.median(x)
    mad = float(np.median(np.abs(x - med)))
    if mad > 0:
        return 1.4826 * (_MAD_BN.get(n) or n / (n - 0.8)) * mad
    return 1.253314 * float(np.mean(np.abs(x - med)))


def _runs(indices: Sequence[int]) -> str:
    shown = ", ".join(f"#{i + 1}" for i in indices[:8])
    return shown + (f" and {len(indices) - 8} more" if len(indices) > 8 else "")


def outlier_indices(values: Values, rule: str = "mad") -> tuple[int, ...]:
    """Indices (0-based, in input order) of outlying runs by ``rule``: ``mad`` or ``iqr``."""
    x = as_sample(values)
    if x.size < 3:
        return ()
    if rule == "mad":
        if x.size < MAD_MIN_RUNS:
            return ()
        scale = _robust_scale(x)
        if scale == 0:
            return ()
        flag = np.abs(x - np.median(x)) / scale > MAD_Z
    elif rule == "iqr":
        q1, q3 = np.percentile(x, [25, 75])
        iqr = q3 - q1
        flag = (x < q1 - IQR_K * iqr) | (x > q3 + IQR_K * iqr)
        if iqr == 0:
            flag[:] = False
    else:
        raise ValueError(f"unknown outlier rule {rule!r} (choose mad or iqr)")
    return tuple(int(i) for i in np.flatnonzero(flag))


def outliers_warning(values: Values, rule: str = "mad") -> StatWarning | None:
    idx = outlier_indices(values, rule)
    if not idx:
        return None
    x = as_sample(values)
    how = (
        f"modified z-score > {MAD_Z}" if rule == "mad" else f"beyond {IQR_K:g}·IQR of the quartiles"
    )
    return StatWarning(
        "outliers",
        f"{len(idx)} of {x.size} runs ({_runs(idx)}) are outliers ({how}); they are kept: "
        "look at their logs for a cause, and prefer --method mannwhitney if they are real",
        {"indices": idx, "rule": rule, "n": int(x.size)},
    )


@dataclass(frozen=True)
class Trend:
    """Monotone trend of values in execution order.

    tau: Kendall's τ in [−1, 1]; p_value: its two-sided p-value; slope: Theil–Sen slope
    in the metric's unit per run; drift: slope·(n − 1)/|median|, the change across the
    sample as a fraction of its median.
    """

    tau: float
    p_value: float
    slope: float
    drift: float

    def to_dict(self) -> dict[str, float]:
        return {"tau": self.tau, "p_value": self.p_value, "slope": self.slope, "drift": self.drift}


def trend(values_in_order: Values) -> Trend:
    x = as_sample(values_in_order)
    n = x.size
    if n < 3 or np.all(x == x[0]):
        return Trend(0.0, 1.0, 0.0, 0.0)
    order = np.arange(n)
    kt = _scipy_stats().kendalltau(order, x)
    slope = float(_scipy_stats().theilslopes(x, order).slope)
    med = abs(float(np.median(x)))
    drift = slope * (n - 1) / med if med > 0 else math.nan
    return Trend(float(kt.statistic), float(kt.pvalue), slope, drift)


def drift_warning(values_in_order: Values) -> StatWarning | None:
    x = as_sample(values_in_order)
    if x.size < 6:
        return None
    tr = trend(x)
    if not (tr.p_value < DRIFT_ALPHA and abs(tr.drift) >= DRIFT_MIN):
        return None
    return StatWarning(
        "drift",
        f"values drift {tr.drift:+.1%} across the {x.size} runs in execution order "
        f"(Kendall τ = {tr.tau:.2f}, p = {tr.p_value:.2g}): the machine's state changes over "
        "time (warm-up, heat, caches, memory fill); interleave variants (order = "
        '"interleaved") and use --method paired, or add warmup runs',
        {"tau": tr.tau, "p_value": tr.p_value, "drift": tr.drift, "slope": tr.slope},
    )


def _best_split_share(sorted_x: FloatArray) -> FloatArray:
    """Share of variance explained by the best two-group split of each sorted row (E, n)."""
    e, n = sorted_x.shape
    g = max(2, math.ceil(BIMODAL_MIN_GROUP * n))
    cs = np.cumsum(sorted_x, axis=1)
    cs2 = np.cumsum(sorted_x * sorted_x, axis=1)
    total = cs2[:, -1] - cs[:, -1] ** 2 / n
    best = np.zeros(e)
    for i in range(g, n - g + 1):
        s1 = cs[:, i - 1]
        s2 = cs[:, -1] - s1
        within = (cs2[:, i - 1] - s1 * s1 / i) + (cs2[:, -1] - cs2[:, i - 1] - s2 * s2 / (n - i))
        with np.errstate(invalid="ignore", divide="ignore"):
            best = np.maximum(best, np.where(total > 0, 1 - within / total, 0.0))
    return best


@functools.lru_cache(maxsize=256)
def bimodality_critical(n: int) -> float:
    """The 99.5% point of the split share for n normal runs (10,000 seeded draws; n > 200 uses 200)."""
    m = min(n, 200)
    rng = np.random.default_rng(20240917 + m)
    x = np.sort(rng.standard_normal((10_000, m)), axis=1)
    return float(np.quantile(_best_split_share(x), 1 - BIMODAL_FALSE_ALARM))


def bimodality_warning(values: Values) -> StatWarning | None:
    x = np.sort(as_sample(values))
    n = x.size
    if n < BIMODAL_MIN_RUNS:
        return None
    _k, (xs,) = _common_scale(x)
    share = float(_best_split_share(xs[None, :])[0])
    crit = bimodality_critical(n)
    if share <= crit:
        return None
    # Locate the split again for the message.
    g = max(2, math.ceil(BIMODAL_MIN_GROUP * n))
    splits = range(g, n - g + 1)
    within = [xs[:i].var() * i + xs[i:].var() * (n - i) for i in splits]
    i = list(splits)[int(np.argmin(within))]
    lo, hi = float(np.mean(x[:i])), float(np.mean(x[i:]))
    return StatWarning(
        "bimodal",
        f"runs fall into two groups ({i} around {lo:.4g}, {n - i} around {hi:.4g}): something "
        "differs between runs (placement, cache, frequency, a background job); find the cause "
        "before trusting a mean — means and percentiles of such runs are unstable",
        {
            "share": share,
            "critical": crit,
            "low_group": i,
            "high_group": n - i,
            "low_mean": lo,
            "high_mean": hi,
        },
    )


def first_run_warning(values_in_order: Values, better: str | None = None) -> StatWarning | None:
    """Warn when the first run is much worse (or, without ``better``, much different)."""
    x = as_sample(values_in_order)
    if x.size < 4:
        return None
    rest = x[1:]
    med = float(np.median(rest))
    scale = _robust_scale(rest)
    dev = float(x[0] - med)
    worse = dev if better == "lower" else -dev if better == "higher" else abs(dev)
    if med == 0 or worse <= 0:
        return None
    rel = worse / abs(med)
    if rel < FIRST_RUN_MIN or (scale > 0 and worse / scale <= FIRST_RUN_Z):
        return None
    word = "worse" if better else "different"
    return StatWarning(
        "slow_first_run",
        f"the first run is {rel:.1%} {word} than the median of the others: a cold start "
        "(caches, page cache, connection set-up, CPU frequency); add warmup = 1 to the spec",
        {"first": float(x[0]), "median_rest": med, "relative": rel},
    )


def unequal_variance_warning(baseline: Values, candidate: Values) -> StatWarning | None:
    a = as_sample(baseline)
    b = as_sample(candidate)
    if a.size < 3 or b.size < 3:
        return None
    k, (a_, b_) = _common_scale(a, b)
    sa, sb = float(a_.std(ddof=1)), float(b_.std(ddof=1))
    lo, hi = min(sa, sb), max(sa, sb)
    if hi == 0 or (lo > 0 and hi / lo < SD_RATIO):
        return None
    p = float(_scipy_stats().levene(a_, b_, center="median").pvalue) if lo > 0 else 0.0
    if not p < 0.05:
        return None
    noisier = "candidate" if sb > sa else "baseline"
    steadier = "baseline" if noisier == "candidate" else "candidate"
    details: dict[str, Detail] = {"sd_baseline": sa * k, "sd_candidate": sb * k, "levene_p": p}
    if lo > 0:
        details["ratio"] = hi / lo
        spread = f"the {noisier}'s runs are {hi / lo:.1f}× as spread out (sd {sa * k:.4g} vs {sb * k:.4g})"
    else:
        spread = (
            f"the {steadier}'s runs are all identical while the {noisier}'s vary (sd {hi * k:.4g})"
        )
    return StatWarning(
        "unequal_variances",
        f"{spread}: Welch's interval allows for it, but a variant this unstable deserves a look at its "
        "runs (bimodal? throttled? contended?); never pool these variances",
        details,
    )


def _common_scale(*samples: FloatArray) -> tuple[float, list[FloatArray]]:
    """(k, samples/k) with k a power of two near the largest |value|: spreads of values
    from 1e-300 to 1e300 computed without overflow or underflow."""
    top = max(float(np.max(np.abs(x))) for x in samples)
    k = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 else 1.0
    return k, [x / k for x in samples]


def too_few_runs_warning(
    baseline: Values,
    candidate: Values,
    comparison: Comparison | None = None,
    resolve: float = 0.01,
    confidence: float = 0.95,
    power: float = DEFAULT_POWER,
) -> StatWarning | None:
    """Warn when nothing was found but the noise could not have shown a change of ``resolve``.

    resolve: the smallest relative change that matters (fraction, e.g. the practical
    threshold). Skipped when the comparison is significant (the runs were enough).
    """
    a = as_sample(baseline)
    b = as_sample(candidate)
    if comparison is not None and comparison.significant:
        return None
    if a.size < 2 or b.size < 2 or resolve <= 0:
        return None
    if comparison is not None and not comparison.relative:
        return None  # a change in the unit (baseline within noise of zero): no relative resolution
    if float(np.mean(a)) == 0:
        return None
    n = int(min(a.size, b.size))
    mde = detectable_change(a, b, n, confidence, power)
    if mde <= resolve:
        return None
    need = runs_needed(a, b, resolve, confidence, power)
    _, (a_, b_) = _common_scale(a, b)
    m = abs(float(a_.mean()))
    cva, cvb = float(a_.std(ddof=1)) / m, float(b_.std(ddof=1)) / m
    need_txt = (
        f"≥ {need} runs per variant are needed"
        if need
        else "more than 100000 runs per variant would be needed"
    )
    return StatWarning(
        "too_few_runs",
        f"with this noise (sd {cva:.1%} and {cvb:.1%} of the baseline mean), {n} runs per "
        f"variant only resolve changes ≥ {mde:.1%} ({power:.0%} power); {need_txt} to "
        f"resolve {resolve:.1%} — add runs or reduce the noise",
        {"n": n, "detectable": mde, "resolve": resolve, "needed": need or -1, "power": power},
    )


@dataclass(frozen=True)
class SampleDiagnostics:
    """Diagnostics of one variant's runs: outlier indices (0-based), trend, warnings."""

    outliers: tuple[int, ...]
    trend: Trend | None
    warnings: tuple[StatWarning, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "outliers": list(self.outliers),
            "trend": self.trend.to_dict() if self.trend else None,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def diagnose_sample(
    values: Values,
    *,
    in_order: bool = True,
    better: str | None = None,
    outlier_rule: str = "mad",
) -> SampleDiagnostics:
    """All one-sample checks. ``in_order``: values are in execution order (enables the
    drift and first-run checks); ``better``: ``"higher"``/``"lower"`` for the first-run check."""
    x = as_sample(values)
    checks = [outliers_warning(x, outlier_rule), bimodality_warning(x)]
    tr = None
    if in_order:
        tr = trend(x)
        checks += [drift_warning(x), first_run_warning(x, better)]
    return SampleDiagnostics(
        outliers=outlier_indices(x, outlier_rule),
        trend=tr,
        warnings=tuple(w for w in checks if w is not None),
    )


def diagnose_comparison(
    baseline: Values,
    candidate: Values,
    comparison: Comparison | None = None,
    *,
    resolve: float = 0.01,
    confidence: float = 0.95,
) -> tuple[StatWarning, ...]:
    """Two-sample checks: unequal variances, too few runs for ``resolve`` (a fraction)."""
    checks = [
        unequal_variance_warning(baseline, candidate),
        too_few_runs_warning(baseline, candidate, comparison, resolve, confidence),
    ]
    return tuple(w for w in checks if w is not None)
