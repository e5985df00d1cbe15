"""The least-squares problem behind `perflab.model.fitting.fit`, scaled, and its bounded solver.

Parameters are (lnI, m, n) with m = M·sb/sa and n = N/sa (sa, sb: the medians of the
CPU and copy times), so that every term is of order one; M and N are bounded to
[0, SCALED_UPPER] on this scale.
"""

from __future__ import annotations

import math

import numpy as np

from perflab.model.observations import Observation

#: The parameter vector, in this order everywhere (solutions, covariance, replicates).
PARAMS = ("lnI", "M", "N")

#: Upper limit of the scaled M and N (the term's median relative to the CPU term's):
#: a fit that runs into it wants that term alone to explain the rates.
SCALED_UPPER = 1e6


class ScaledProblem:
    """Scaled least-squares problem: parameters (lnI, m, n) with m = M·sb/sa, n = N/sa."""

    def __init__(self, obs: list[Observation]):
        a = np.array([o.cpu_time for o in obs])
        b = np.array([o.copy_time for o in obs])
        self.sa = float(np.median(a))
        self.sb = float(np.median(b))
        self.a = a / self.sa
        self.b = b / self.sb
        # ln I_p = ln r_p + ln sa + ln(ã + m b̃ + n)
        self.z = np.log([o.known_rate for o in obs]) + math.log(self.sa)

    def to_orig(self, th: np.ndarray) -> np.ndarray:
        return np.array([th[0], th[1] * self.sa / self.sb, th[2] * self.sa])

    def to_scaled(self, p: np.ndarray) -> np.ndarray:
        return np.array([p[0], p[1] * self.sb / self.sa, p[2] / self.sa])

    def scaled_constants(self, fixed: dict[str, float]) -> dict[str, float]:
        """Fixed constants ({"M": …, "N": …}, original units) on this problem's scale."""
        scaled = self.to_scaled(np.array([0.0, fixed.get("M", 0.0), fixed.get("N", 0.0)]))
        return {name: scaled[PARAMS.index(name)] for name in fixed}


def solve(
    prob: ScaledProblem,
    Z: np.ndarray,
    free: tuple[str, ...],
    fixed_scaled: dict[str, float],
    starts: np.ndarray,
) -> np.ndarray:
    """Scaled (lnI, m, n) minimising Σ (ln I_p − lnI)² with m, n ≥ 0, for each row of Z
    (B × platforms) from each start (S × 3); returns B × 3, the best start per row.

    Batched projected Gauss–Newton with backtracking, written by hand because a
    bootstrap needs thousands of tiny bounded fits and scipy's solvers take ~5 ms each.
    lnI is profiled out: for given (m, n) its optimum is the mean of ln t_p + z_p.
    """
    Z = np.atleast_2d(Z)
    B, S = Z.shape[0], starts.shape[0]
    Zr = np.repeat(Z, S, axis=0)  # (B·S) × n
    X = np.tile(starts[:, 1:3], (B, 1)).astype(float)
    mask = np.array(["M" in free, "N" in free], dtype=float)
    if "M" not in free:
        X[:, 0] = fixed_scaled.get("M", 0.0)
    if "N" not in free:
        X[:, 1] = fixed_scaled.get("N", 0.0)
    a, b = prob.a, prob.b

    def cost_of(Xc: np.ndarray, Zc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = a + Xc[:, :1] * b + Xc[:, 1:2]
        v = np.log(t) + Zc
        r = v - v.mean(axis=1, keepdims=True)
        return np.sum(r * r, axis=1), r, t

    cost, r, t = cost_of(X, Zr)
    for _ in range(200):
        d = b / t
        d -= d.mean(axis=1, keepdims=True)
        e = 1.0 / t
        e -= e.mean(axis=1, keepdims=True)
        g = np.stack([np.sum(d * r, axis=1), np.sum(e * r, axis=1)], axis=1) * mask
        # Active set: a parameter at its bound whose gradient pushes it below stays put.
        free_now = mask * ~(((X <= 0.0) & (g > 0)) | ((X >= SCALED_UPPER) & (g < 0)))
        h11 = np.sum(d * d, axis=1) * free_now[:, 0] + (1 - free_now[:, 0])
        h22 = np.sum(e * e, axis=1) * free_now[:, 1] + (1 - free_now[:, 1])
        h12 = np.sum(d * e, axis=1) * free_now[:, 0] * free_now[:, 1]
        g = g * free_now
        h11 = h11 * (1 + 1e-9)
        h22 = h22 * (1 + 1e-9)
        det = h11 * h22 - h12 * h12
        det = np.where(np.abs(det) < 1e-300, 1e-300, det)
        step = -np.stack(
            [(h22 * g[:, 0] - h12 * g[:, 1]) / det, (h11 * g[:, 1] - h12 * g[:, 0]) / det], axis=1
        )
        step = np.nan_to_num(step * free_now)
        alpha = np.ones(X.shape[0])
        pending = np.ones(X.shape[0], dtype=bool)
        newX = X.copy()
        new_cost = cost.copy()
        for _ in range(40):
            idx = np.nonzero(pending)[0]
            if idx.size == 0:
                break
            cand = np.clip(X[idx] + alpha[idx, None] * step[idx], 0.0, SCALED_UPPER)
            c_cost = cost_of(cand, Zr[idx])[0]
            ok = c_cost <= cost[idx]
            newX[idx[ok]] = cand[ok]
            new_cost[idx[ok]] = c_cost[ok]
            pending[idx[ok]] = False
            alpha[idx[~ok]] *= 0.5
        improvement = cost - new_cost
        X = newX
        cost, r, t = cost_of(X, Zr)
        if np.all(improvement <= 1e-15 * (1.0 + cost)):
            break
    v = np.log(t) + Zr
    lnI = v.mean(axis=1)
    cost = cost.reshape(B, S)
    best = np.argmin(cost, axis=1)
    rows = np.arange(B) * S + best
    return np.column_stack([lnI[rows], X[rows, 0], X[rows, 1]])


def starts(free: tuple[str, ...]) -> np.ndarray:
    ms = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0] if "M" in free else [0.0]
    ns = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0] if "N" in free else [0.0]
    return np.array([[0.0, m, n] for m in ms for n in ns])
