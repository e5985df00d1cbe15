"""What a fit returns: `FitResult` (the constants, their uncertainty, what the data cannot
identify), one `PlatformFit` per platform and one `LeaveOneOut` prediction per platform.
Made by `fit.fit`, read by `predict.predict` and the reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.model.observations import Observation
from perflab.stats import StatWarning


@dataclass(frozen=True)
class PlatformFit:
    """One platform under the fitted constants (rates in the input's unit per second)."""

    platform: str
    rate: float
    index: float  # I_p = rate × (1/cpu + M·L/C + N)
    fitted_rate: float  # I / (1/cpu + M·L/C + N)
    residual: float  # ln(rate / fitted_rate)


@dataclass(frozen=True)
class LeaveOneOut:
    """Prediction of a platform's rate from a fit on all the others.

    error: predicted / observed − 1 (a fraction); NaN when the others cannot identify
    the free constants.
    """

    platform: str
    observed: float
    predicted: float
    low: float
    high: float
    error: float
    note: str = ""


@dataclass
class FitResult:
    """Estimated constants with their uncertainty.

    M:          dimensionless weight of the memmove term.
    N:          fixed per-packet time in seconds.
    I:          the common index, exp(mean ln I_p).
    sigma:      residual standard deviation of ln rate (≈ relative spread), NaN when dof = 0.
    dof:        platforms − parameters estimated (bound-pinned ones not counted).
    t_intervals: parameter → (low, high) from standard errors and Student's t (dof); in
                simulation (8 platforms, 3 parameters) it covers M 93–95% of the time at 95%.
    intervals:  parameter → (low, high) percentile residual-bootstrap interval at
                ``confidence``; it ignores the t correction for few degrees of freedom and
                under-covers with few platforms (≈ 86% at 95% for 8 platforms).
    """

    observations: list[Observation]
    free: tuple[str, ...]
    fixed: dict[str, float]
    M: float
    N: float
    I: float  # noqa: E741 -- the model's own parameter name (docs/probes-and-model.md)
    sigma: float
    dof: int
    confidence: float
    se: dict[str, float]
    cov: np.ndarray  # over (lnI, M, N), zero rows/columns for fixed or bound-pinned ones
    intervals: dict[str, tuple[float, float]]
    t_intervals: dict[str, tuple[float, float]]
    platforms: list[PlatformFit]
    loo: list[LeaveOneOut]
    at_bound: tuple[str, ...]
    statements: list[str]
    warnings: list[StatWarning] = field(default_factory=list)
    unidentified: tuple[str, ...] = ()  # constants the data cannot pin down (see statements)
    boot: np.ndarray | None = None  # bootstrap replicates of (lnI, M, N)
    boot_residuals: np.ndarray | None = None  # the inflated residuals they were drawn from

    @property
    def log_sd(self) -> float:
        """Spread of ln I_p around ln I (ddof = 1), the quantity minimised."""
        logs = np.log([p.index for p in self.platforms])
        return float(np.std(logs, ddof=1)) if len(logs) > 1 else math.nan

    @property
    def loo_rms(self) -> float:
        """Root mean square of ln(predicted/observed) over the leave-one-out predictions."""
        errs = [math.log1p(x.error) for x in self.loo if math.isfinite(x.error)]
        return float(math.sqrt(np.mean(np.square(errs)))) if errs else math.nan

    def to_json(self) -> dict[str, Any]:
        def pair(p: tuple[float, float]) -> list[float]:
            return [p[0], p[1]]

        return {
            "M": self.M,
            "N_seconds": self.N,
            "I": self.I,
            "sigma_ln_rate": self.sigma,
            "dof": self.dof,
            "confidence": self.confidence,
            "free": list(self.free),
            "fixed": self.fixed,
            "at_bound": list(self.at_bound),
            "unidentified": list(self.unidentified),
            "se": self.se,
            "intervals": {k: pair(v) for k, v in self.intervals.items()},
            "t_intervals": {k: pair(v) for k, v in self.t_intervals.items()},
            "log_sd": self.log_sd,
            "loo_rms_ln": self.loo_rms,
            "platforms": [p.__dict__ for p in self.platforms],
            "leave_one_out": [x.__dict__ for x in self.loo],
            "statements": self.statements,
            "warnings": [w.to_dict() for w in self.warnings],
        }
