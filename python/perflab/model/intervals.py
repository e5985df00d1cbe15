"""Uncertainty of a fit's constants: Student-t intervals from the Jacobian and the
residual spread, percentile intervals from a residual bootstrap (see fit.py)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

from perflab.model.observations import Observation
from perflab.model.solver import PARAMS, ScaledProblem, solve


class TIntervals(NamedTuple):
    """Student-t uncertainty of the free constants of a fit (`t_intervals`)."""

    cov: np.ndarray  # (3, 3) covariance of (lnI, M, N)
    se: dict[str, float]  # standard error by constant
    intervals: dict[str, tuple[float, float]]  # (low, high) by constant; I on its own scale


def t_intervals(
    observations: list[Observation],
    prob: ScaledProblem,
    t: np.ndarray,
    free: tuple[str, ...],
    active: tuple[str, ...],
    p_orig: np.ndarray,
    sigma: float,
    dof: int,
    confidence: float,
    *,
    identified: bool = True,
) -> TIntervals:
    """(covariance of (lnI, M, N), standard errors, Student-t intervals) of the free
    parameters, from the Jacobian in original units; I's interval on its own scale.
    Zeros and NaNs without a degree of freedom, or when a constant is not ``identified``."""
    n = len(observations)
    cov = np.zeros((3, 3))
    se = dict.fromkeys(free, math.nan)
    t_int = dict.fromkeys(free, (math.nan, math.nan))
    if dof <= 0 or not identified:
        return TIntervals(cov, se, t_int)
    orig_cols = {
        "lnI": -np.ones(n),
        "M": np.array([o.copy_time for o in observations]) / (t * prob.sa),
        "N": 1.0 / (t * prob.sa),
    }
    Jo = np.column_stack([orig_cols[f] for f in active])
    scale = np.linalg.norm(Jo, axis=0)
    inv = np.linalg.pinv((Jo / scale).T @ (Jo / scale)) / np.outer(scale, scale)
    q = float(sps.t.ppf(0.5 + confidence / 2, dof))
    for i, f in enumerate(active):
        for j, g in enumerate(active):
            cov[PARAMS.index(f), PARAMS.index(g)] = sigma**2 * inv[i, j]
        se[f] = float(math.sqrt(max(cov[PARAMS.index(f), PARAMS.index(f)], 0.0)))
        est = p_orig[PARAMS.index(f)]
        lo, hi = est - q * se[f], est + q * se[f]
        t_int[f] = (math.exp(lo), math.exp(hi)) if f == "lnI" else (max(float(lo), 0.0), float(hi))
    return TIntervals(cov, se, t_int)


class BootstrapIntervals(NamedTuple):
    """Percentile intervals of a fit's constants and what they came from (`bootstrap_intervals`)."""

    intervals: dict[str, tuple[float, float]]  # (low, high) by constant
    replicates: np.ndarray  # (B, 3): the refits' (lnI, M, N)
    residuals: np.ndarray  # the inflated, centred residuals they were drawn from


def bootstrap_intervals(
    prob: ScaledProblem,
    th: np.ndarray,
    resid: np.ndarray,
    free: tuple[str, ...],
    fixed_scaled: dict[str, float],
    dof: int,
    B: int,
    confidence: float,
    seed: int,
) -> BootstrapIntervals:
    """Percentile intervals at ``confidence`` from B residual-bootstrap refits: (intervals
    by constant, the replicates of (lnI, M, N), the inflated residuals they were drawn from)."""
    rng = np.random.default_rng(seed)
    n = resid.size
    # Leverage-adjusted residuals r_i / sqrt(1 − h_i), centred (Davison & Hinkley 1997, §6.2.3):
    # raw residuals are too small, most of all at the platforms that pin the fit down.
    t = prob.a + th[1] * prob.b + th[2]
    cols = {"lnI": -np.ones(n), "M": prob.b / t, "N": 1.0 / t}
    J = np.column_stack(
        [cols[f] for f in free if not (f != "lnI" and th[PARAMS.index(f)] <= 1e-12)]
    )
    h = np.clip(np.sum(J * (J @ np.linalg.pinv(J.T @ J)), axis=1), 0.0, 0.99)
    adjusted = resid / np.sqrt(1.0 - h)
    centred = adjusted - adjusted.mean()
    fitted_z = prob.z - resid  # the z that would make every ln I_p equal ln I
    Z = fitted_z + rng.choice(centred, size=(B, n), replace=True)
    scaled = solve(prob, Z, free, fixed_scaled, th[None, :])
    reps = np.column_stack([scaled[:, 0], scaled[:, 1] * prob.sa / prob.sb, scaled[:, 2] * prob.sa])
    alpha = 1 - confidence
    out = {}
    for f in free:
        col = reps[:, PARAMS.index(f)]
        lo, hi = np.quantile(col, [alpha / 2, 1 - alpha / 2])
        if f == "lnI":
            out["I"] = (float(math.exp(lo)), float(math.exp(hi)))
        else:
            out[f] = (float(lo), float(hi))
    return BootstrapIntervals(out, reps, centred)
