"""Predicting a platform's rate from its probe results and a fitted model.

rate = I / (1/cpu + M·L/C + N). The prediction interval on ln rate combines the
uncertainty of the fitted constants with the platform-to-platform scatter σ:

* ``"t"`` (default): delta method, var = gᵀ Σ g + σ², Student's t with the fit's dof;
* ``"bootstrap"``: the fit's bootstrap replicates, each plus a resampled residual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from perflab.errors import InputError
from perflab.model.fit_result import FitResult
from perflab.model.observations import Observation
from perflab.model.solver import PARAMS


@dataclass(frozen=True)
class Prediction:
    """Predicted rate (packets/s) with its prediction interval; NaN bounds when the fit
    has no degrees of freedom left (``note`` says why)."""

    platform: str
    rate: float
    low: float
    high: float
    confidence: float
    method: str
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def predict(
    fit: FitResult,
    target: Observation,
    *,
    confidence: float | None = None,
    method: str = "t",
    seed: int = 0,
) -> Prediction:
    """Rate of ``target`` (its rate, if any, is ignored) under ``fit``."""
    conf = fit.confidence if confidence is None else confidence
    if not 0 < conf < 1:
        raise InputError(f"confidence must be in (0, 1), not {conf}")
    for name, v in (("cpu", target.cpu), ("memmove", target.memmove), ("length", target.length)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InputError(
                f"platform {target.platform!r}: {name} must be a positive number, not {v!r}"
            )
    t = target.cpu_time + fit.M * target.copy_time + fit.N
    ln_rate = math.log(fit.I) - math.log(t)
    rate = math.exp(ln_rate)
    if method not in ("t", "bootstrap"):
        raise InputError(f"prediction method {method!r}: use 't' or 'bootstrap'")
    if not math.isfinite(fit.sigma) or fit.dof < 1:
        return Prediction(
            target.platform,
            rate,
            math.nan,
            math.nan,
            conf,
            method,
            "no interval: the fit has no degrees of freedom left",
        )
    if fit.unidentified:
        return Prediction(
            target.platform,
            rate,
            math.nan,
            math.nan,
            conf,
            method,
            f"no interval: the fit cannot identify {' and '.join(fit.unidentified)}",
        )
    if method == "t":
        g = np.array([1.0, -target.copy_time / t, -1.0 / t])
        var = float(g @ fit.cov @ g) + fit.sigma**2
        q = float(sps.t.ppf(0.5 + conf / 2, fit.dof))
        half = q * math.sqrt(max(var, 0.0))
        return Prediction(
            target.platform, rate, math.exp(ln_rate - half), math.exp(ln_rate + half), conf, "t"
        )
    if fit.boot is None or fit.boot_residuals is None:
        raise InputError(
            "bootstrap prediction needs a fit with bootstrap replicates (bootstrap > 0)"
        )
    rng = np.random.default_rng(seed)
    b = fit.boot
    ts = target.cpu_time + b[:, PARAMS.index("M")] * target.copy_time + b[:, PARAMS.index("N")]
    draws = b[:, 0] - np.log(ts) + rng.choice(fit.boot_residuals, size=b.shape[0], replace=True)
    lo, hi = np.quantile(draws, [(1 - conf) / 2, (1 + conf) / 2])
    return Prediction(
        target.platform, rate, float(math.exp(lo)), float(math.exp(hi)), conf, "bootstrap"
    )
