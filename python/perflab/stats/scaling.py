"""Scaling fit: cost = a + b·n^k over a numeric size parameter, per variant, with intervals.

The lookup-structure experiment timed lookups at sizes 100 … 100M and concluded "5.59%
degradation". A fit over all sizes says more, and says it with an interval: the fixed cost a
(unit of the metric), the per-unit cost at a size n₀, b·n₀^(k−1) (the size-dependent part of the
cost divided by the size, e.g. seconds per lookup), the exponent k (1 = linear), and the
relative difference of per-unit costs between two variants.

Method: weighted non-linear least squares (scipy.optimize.curve_fit) of the per-size
means with their standard errors as weights, parametrised (a, log b, k) so that the
per-unit cost's logarithm is linear in the parameters. If the model does not fit within
the runs' noise (reduced χ² > 1: caches, page sizes, …) the covariance is scaled by
reduced χ² (Birge ratio) and t quantiles use the fit's own degrees of freedom, so the
intervals widen instead of pretending a precision the model lacks. "Does not fit" is a
χ² test of the weighted residuals at p < 0.05, so that chance misfit of a correct model
does not throw away the runs' degrees of freedom. Needs ≥ 2 runs at
each size (for its standard error) and more sizes than parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray, IntArray
from perflab.stats.intervals import check_confidence
from perflab.stats.warnings import StatWarning

#: The model is taken to misfit when the χ² test of the weighted residuals gives p below this.
MISFIT_ALPHA = 0.05
#: Below this many standard errors at every size, the fitted b·n^k is no part of the data: the
#: fit has collapsed to a constant (b → 0) and (log b, k) are not identified.
NEGLIGIBLE_SIZE_TERM = 1e-6
#: Distinct sizes a fit needs: more than its parameters a, b and k (`fit_scaling`: one more to
#: judge the fit); with the exponent fixed, one fewer. `perflab.analysis.scaling` checks it
#: before fitting, and a heterogeneous sweep (`perflab.analysis.sweep`) suggests a fit with it.
MIN_SIZES = 4


@dataclass(frozen=True)
class Estimate:
    """A fitted quantity with its ``confidence`` interval (same unit as the value)."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class ScalingFit:
    """cost(n) = a + b·n^k fitted for one variant.

    a:           fixed cost, unit of the metric.
    b:           coefficient, metric unit per size^k.
    k:           exponent (unitless); exactly the given value when fixed.
    sizes/means/sems: per-size data fitted (size ascending; means and standard errors in
                 the metric's unit).
    reduced_chi2: weighted misfit per degree of freedom (≈ 1 when the model fits).
    df:          degrees of freedom of the t quantiles.
    covariance:  covariance of (a, log b, k) (k row/column zero when fixed).
    """

    confidence: float
    a: Estimate
    b: Estimate
    k: Estimate
    exponent_fixed: bool
    sizes: tuple[float, ...]
    means: tuple[float, ...]
    sems: tuple[float, ...]
    reduced_chi2: float
    df: float
    covariance: tuple[tuple[float, ...], ...]
    warnings: tuple[StatWarning, ...] = field(default=())

    def predict(self, n: float | FloatArray) -> FloatArray:
        return self.a.value + self.b.value * np.asarray(n, dtype=np.float64) ** self.k.value

    def _log_per_unit(self, n: float) -> tuple[float, float]:
        """log of b·n^(k−1) and its standard error."""
        lb = math.log(self.b.value)
        g = np.array([0.0, 1.0, math.log(n)])
        var = float(g @ np.array(self.covariance) @ g)
        return lb + (self.k.value - 1) * math.log(n), math.sqrt(max(var, 0.0))

    def per_unit(self, n: float | None = None) -> Estimate:
        """Per-unit cost b·n^(k−1) at size ``n`` (default: the largest size), metric unit per unit."""
        n = float(n if n is not None else self.sizes[-1])
        lp, se = self._log_per_unit(n)
        t = float(special.stdtrit(self.df, 0.5 + self.confidence / 2))
        return Estimate(_exp(lp), _exp(lp - t * se), _exp(lp + t * se))

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "k": self.k.to_dict(),
            "exponent_fixed": self.exponent_fixed,
            "per_unit_at_largest": self.per_unit().to_dict(),
            "largest_size": self.sizes[-1],
            "sizes": list(self.sizes),
            "means": list(self.means),
            "sems": list(self.sems),
            "reduced_chi2": self.reduced_chi2,
            "df": self.df,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def _group(
    sizes: Sequence[float], costs: Sequence[float]
) -> tuple[FloatArray, FloatArray, FloatArray, IntArray]:
    s = np.array(sizes, dtype=np.float64, copy=True).ravel()
    c = np.array(costs, dtype=np.float64, copy=True).ravel()
    if s.size != c.size:
        raise ValueError("one size per cost value is needed")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(c))):
        raise ValueError("sizes and costs must be finite")
    if np.any(s <= 0):
        raise ValueError("sizes must be positive")
    uniq = np.unique(s)
    means, sems, counts = [], [], []
    for u in uniq:
        x = c[s == u]
        if x.size < 2:
            raise ValueError(f"size {u:g}: need ≥ 2 runs per size for a standard error")
        means.append(float(x.mean()))
        sems.append(float(x.std(ddof=1)) / math.sqrt(x.size))
        counts.append(int(x.size))
    return uniq, np.array(means), np.array(sems), np.array(counts)


def fit_scaling(
    sizes: Sequence[float],
    costs: Sequence[float],
    confidence: float = 0.95,
    exponent: float | None = None,
) -> ScalingFit:
    """Fit cost = a + b·n^k to runs given as parallel ``sizes`` and ``costs``.

    exponent: fix k (e.g. 1.0 for linear) or None to fit it (0.05 ≤ k ≤ 4).
    """
    confidence = check_confidence(confidence)
    n, m, se, counts = _group(sizes, costs)
    p = 2 if exponent is not None else 3
    if n.size <= p:
        raise ValueError(f"need more than {p} distinct sizes to fit {p} parameters (have {n.size})")
    if np.any(m <= 0):
        raise ValueError("mean costs must be positive")
    se = _floor_sems(m, se)
    f, p0, lower, upper = _model(n, m, exponent)
    popt, pcov = _fit_means(f, n, m, se, p0, (lower, upper))
    resid = (m - f(n, *popt)) / se
    dof = n.size - p
    chi2 = float(np.sum(resid**2)) / dof
    pcov, warnings = _collapsed(n, se, popt, pcov, exponent)
    pcov, df, misfit = _misfit(pcov, chi2, dof, counts)
    warnings += misfit
    cov = np.zeros((3, 3))
    cov[:p, :p] = pcov
    t = float(special.stdtrit(df, 0.5 + confidence / 2))
    sd = [float(x) for x in np.sqrt(np.maximum(np.diag(cov), 0.0))]
    a, lb = float(popt[0]), float(popt[1])
    k = float(popt[2]) if exponent is None else float(exponent)
    return ScalingFit(
        confidence=confidence,
        a=Estimate(a, a - t * sd[0], a + t * sd[0]),
        b=Estimate(_exp(lb), _exp(lb - t * sd[1]), _exp(lb + t * sd[1])),
        k=Estimate(k, k - t * sd[2], k + t * sd[2]),
        exponent_fixed=exponent is not None,
        sizes=tuple(float(x) for x in n),
        means=tuple(float(x) for x in m),
        sems=tuple(float(x) for x in se),
        reduced_chi2=chi2,
        df=df,
        covariance=tuple(tuple(float(v) for v in row) for row in cov),
        warnings=tuple(warnings),
    )


def _floor_sems(m: FloatArray, se: FloatArray) -> FloatArray:
    """Zero spread at a size (coarse timer): borrow the pooled relative error."""
    rel = se / m
    floor = float(np.median(rel[rel > 0])) if np.any(rel > 0) else 1e-6
    floored: FloatArray = np.where(se > 0, se, floor * m)
    return floored


def _model(
    n: FloatArray, m: FloatArray, exponent: float | None
) -> tuple[Callable[..., FloatArray], list[float], list[float], list[float]]:
    """The model of the means in (a, log b, k), or (a, log b) with k fixed; its starting
    point and bounds. Start: the slope of log(mean − a0) against log n over the sizes, a0
    below the smallest mean."""
    a0 = 0.5 * float(m.min())
    y = np.log(np.maximum(m - a0, 1e-300))
    k0 = float(np.clip(np.polyfit(np.log(n), y, 1)[0], 0.1, 3.0)) if exponent is None else exponent
    lb0 = float(np.median(y - k0 * np.log(n)))
    if exponent is None:

        def f_free(x: FloatArray, a: float, lb: float, k: float) -> FloatArray:
            return a + np.exp(lb + k * np.log(x))

        return f_free, [a0, lb0, k0], [-np.inf, -np.inf, 0.05], [np.inf, np.inf, 4.0]
    k_fixed = exponent

    def f_fixed(x: FloatArray, a: float, lb: float) -> FloatArray:
        return a + np.exp(lb + k_fixed * np.log(x))

    return f_fixed, [a0, lb0], [-np.inf, -np.inf], [np.inf, np.inf]


def _fit_means(
    f: Callable[..., FloatArray],
    n: FloatArray,
    m: FloatArray,
    se: FloatArray,
    p0: list[float],
    bounds: tuple[list[float], list[float]],
) -> tuple[FloatArray, FloatArray]:
    """Weighted least squares of the means ``m`` at sizes ``n`` (standard errors ``se``):
    the parameters and their covariance. ValueError when it does not converge."""
    try:
        from scipy import optimize  # on use: ~0.1 s to import

        popt, pcov = optimize.curve_fit(
            f,
            n,
            m,
            p0=p0,
            sigma=se,
            absolute_sigma=True,
            bounds=bounds,
            method="trf",
            max_nfev=20_000,
        )
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"the scaling fit did not converge: {exc}") from None
    return popt, pcov


def _collapsed(
    n: FloatArray, se: FloatArray, popt: FloatArray, pcov: FloatArray, exponent: float | None
) -> tuple[FloatArray, list[StatWarning]]:
    """The covariance, undefined (NaN) with a warning when the fit collapsed (b → 0):
    curve_fit's pseudo-inverse drops the unidentified directions and reports zero variance
    for them, i.e. false precision."""
    size_term = np.exp(popt[1] + (popt[2] if exponent is None else exponent) * np.log(n))
    negligible = float(np.max(size_term / se)) < NEGLIGIBLE_SIZE_TERM
    if not (negligible or np.any(~(np.diag(pcov) > 0))):
        return pcov, []
    warning = StatWarning(
        "no_size_dependence",
        "the cost does not grow measurably with n: the fit of a + b·n^k collapsed to a constant "
        f"(b·n^k ≈ {float(size_term[-1]):.3g} at the largest size), so per-unit costs and their "
        "intervals are undefined; fit a cost that grows with the size, or fix the exponent",
        {"size_term": float(size_term[-1])},
    )
    return np.full_like(pcov, np.nan), [warning]


def _misfit(
    pcov: FloatArray, chi2: float, dof: int, counts: IntArray
) -> tuple[FloatArray, float, list[StatWarning]]:
    """The covariance and the t quantiles' degrees of freedom: the runs' own when the model
    fits within their noise; else the covariance scaled by reduced χ² (Birge ratio) and the
    fit's degrees of freedom, with a warning when it misses by far."""
    misfit_p = float(special.chdtrc(dof, chi2 * dof))
    if not misfit_p < MISFIT_ALPHA:
        return pcov, float(np.sum(counts - 1)), []
    warnings = []
    if chi2 > 4:
        warnings.append(
            StatWarning(
                "poor_fit",
                f"cost = a + b·n^k misses the per-size means by {math.sqrt(chi2):.1f}× their "
                "standard errors (caches? page sizes?): intervals are widened to match; "
                "look at the residuals or fit a narrower size range",
                {"reduced_chi2": chi2},
            )
        )
    return pcov * chi2, float(dof), warnings


@dataclass(frozen=True)
class ScalingComparison:
    """Relative difference of per-unit costs, candidate against baseline, at size ``at``.

    estimate/low/high: fractions (0.056 = the candidate costs 5.6% more per unit).
    baseline/candidate: per-unit costs at ``at`` with their intervals.
    """

    at: float
    confidence: float
    estimate: float
    low: float
    high: float
    baseline: Estimate
    candidate: Estimate
    exponent_baseline: Estimate
    exponent_candidate: Estimate

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "confidence": self.confidence,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "significant": self.significant,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "exponent_baseline": self.exponent_baseline.to_dict(),
            "exponent_candidate": self.exponent_candidate.to_dict(),
        }


def compare_scaling(
    baseline: ScalingFit, candidate: ScalingFit, at: float | None = None
) -> ScalingComparison:
    """Per-unit cost of ``candidate`` relative to ``baseline`` at size ``at`` (default: the
    largest size both fits cover), with a Welch–Satterthwaite t interval on the log ratio."""
    if not math.isclose(baseline.confidence, candidate.confidence):
        raise ValueError("both fits must use one confidence level")
    at = float(at if at is not None else min(baseline.sizes[-1], candidate.sizes[-1]))
    la, sa = baseline._log_per_unit(at)
    lb, sb = candidate._log_per_unit(at)
    va, vb = sa * sa, sb * sb
    df = (
        (va + vb) ** 2 / (va * va / baseline.df + vb * vb / candidate.df)
        if va + vb > 0
        else math.inf
    )
    t = float(special.stdtrit(df, 0.5 + baseline.confidence / 2))
    d = lb - la
    half = t * math.sqrt(va + vb)
    return ScalingComparison(
        at=at,
        confidence=baseline.confidence,
        estimate=_expm1(d),
        low=_expm1(d - half),
        high=_expm1(d + half),
        baseline=baseline.per_unit(at),
        candidate=candidate.per_unit(at),
        exponent_baseline=baseline.k,
        exponent_candidate=candidate.k,
    )


def _exp(x: float) -> float:
    """exp that saturates at +inf (an unbounded interval end) instead of raising."""
    return math.exp(x) if not x >= 709.0 else math.inf  # NaN stays NaN


def _expm1(x: float) -> float:
    return math.expm1(x) if not x >= 709.0 else math.inf
