"""Fitting M and N (and I) across platforms: the constants that make the index I the
same everywhere.

Model, per platform p with observed rate r_p:

    ln r_p = ln I − ln(1/cpu_p + M·L_p/C_p + N) + ε_p,      ε_p ~ N(0, σ²)

so minimising the spread of ln I_p (least squares on log I) is maximum likelihood
for multiplicative noise on the rate — the natural scale when rates differ 15×.
M ≥ 0 and N ≥ 0 (a memory cost and a fixed per-packet time cannot be negative).

Uncertainty: σ from the residuals (n − k degrees of freedom, k = free parameters not
pinned at a bound); standard errors from the Jacobian; percentile intervals from a
residual bootstrap (fitted values plus resampled, leverage-inflated residuals,
refitted); leave-one-platform-out prediction errors. What the data cannot identify
is said in `FitResult.statements` rather than hidden behind a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from perflab.errors import InputError
from perflab.model.observations import Observation, check
from perflab.stats import StatWarning

PARAMS = ("lnI", "M", "N")

#: Singular-value ratio below which a parameter combination counts as unidentified.
IDENTIFIABILITY_RTOL = 1e-7

#: Upper limit of the scaled M and N (the term's median relative to the CPU term's):
#: a fit that runs into it wants that term alone to explain the rates.
SCALED_UPPER = 1e6


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

    def to_json(self) -> dict:
        def pair(p):
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


class _Problem:
    """Scaled least-squares problem: parameters (lnI, m, n) with m = M·sb/sa, n = N/sa."""

    def __init__(self, obs: list[Observation]):
        a = np.array([o.cpu_time for o in obs])
        b = np.array([o.copy_time for o in obs])
        self.sa = float(np.median(a))
        self.sb = float(np.median(b))
        self.a = a / self.sa
        self.b = b / self.sb
        # ln I_p = ln r_p + ln sa + ln(ã + m b̃ + n)
        self.z = np.log([o.rate for o in obs]) + math.log(self.sa)

    def to_orig(self, th: np.ndarray) -> np.ndarray:
        return np.array([th[0], th[1] * self.sa / self.sb, th[2] * self.sa])

    def to_scaled(self, p: np.ndarray) -> np.ndarray:
        return np.array([p[0], p[1] * self.sb / self.sa, p[2] / self.sa])


def _solve(
    prob: _Problem,
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

    def cost_of(Xc, Zc):
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


def _starts(free: tuple[str, ...]) -> np.ndarray:
    ms = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0] if "M" in free else [0.0]
    ns = [0.0, 0.01, 0.1, 1.0, 10.0, 100.0] if "N" in free else [0.0]
    return np.array([[0.0, m, n] for m in ms for n in ns])


def fit(
    observations: list[Observation],
    *,
    M: float | None = None,
    N: float | None = None,
    bootstrap: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    loo: bool = True,
) -> FitResult:
    """Estimates the free constants (M and/or N unless given) and I from the platforms.

    bootstrap: residual-bootstrap replicates (0 to skip); seed makes them reproducible.
    """
    check(observations)
    if not 0 < confidence < 1:
        raise InputError(f"confidence must be in (0, 1), not {confidence}")
    fixed: dict[str, float] = {}
    for name, v in (("M", M), ("N", N)):
        if v is not None:
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be finite and ≥ 0, not {v}")
            fixed[name] = float(v)
    free = tuple(p for p in PARAMS if p not in fixed)
    n = len(observations)
    k = len(free)
    if n < k or n < 2:
        shown = ", ".join("I" if f == "lnI" else f for f in free)
        fixable = " or ".join(f for f in free if f != "lnI")
        raise InputError(
            f"fewer platforms ({n}) than parameters to estimate ({k}: {shown}): add platforms"
            + (f" or fix {fixable} (--M/--N)" if fixable else "")
            if n < k
            else f"need at least 2 platforms to fit, got {n}"
        )

    prob = _Problem(observations)
    fixed_scaled = {
        name: prob.to_scaled(np.array([0.0, fixed.get("M", 0.0), fixed.get("N", 0.0)]))[
            PARAMS.index(name)
        ]
        for name in fixed
    }
    th = _solve(prob, prob.z, free, fixed_scaled, _starts(free))[0]
    p_orig = prob.to_orig(th)
    statements: list[str] = []
    warnings: list[StatWarning] = []

    t = prob.a + th[1] * prob.b + th[2]
    resid = np.log(t) + prob.z - th[0]
    at_bound = tuple(f for f in free if f != "lnI" and th[PARAMS.index(f)] <= 1e-12)
    at_upper = tuple(
        f for f in free if f != "lnI" and th[PARAMS.index(f)] >= SCALED_UPPER * (1 - 1e-9)
    )
    active = tuple(f for f in free if f not in at_bound)
    dof = n - len(active)

    # Identifiability: rank of the (column-normalised) Jacobian of all free parameters
    # (a bound-pinned one included: the bound must not hide a confounding).
    cols = {"lnI": -np.ones(n), "M": prob.b / t, "N": 1.0 / t}
    J = np.column_stack([cols[f] for f in free])
    norms = np.linalg.norm(J, axis=0)
    sv, vt = np.linalg.svd(J / norms, full_matrices=False)[1:]
    unidentified: list[str] = []
    if sv.size and sv[-1] < IDENTIFIABILITY_RTOL * sv[0] and not at_upper:
        null = vt[-1]
        involved = [free[i] for i in range(len(free)) if abs(null[i]) > 0.1]
        unidentified = [f for f in involved if f != "lnI"] or involved
        statements.append(
            f"the platforms cannot identify {' and '.join(unidentified)}: "
            + (
                "their effects are indistinguishable from each other"
                if len(involved) > 1
                else "it has no effect"
            )
            + " on these data (e.g. the same L/C or CPU mix everywhere); fix it with "
            + "/".join(f"--{u}" for u in unidentified if u != "lnI")
            + " or add platforms that differ"
        )

    for f in at_upper:
        term = "memmove term M·L/C" if f == "M" else "fixed per-packet time N"
        statements.append(
            f"{f} grows without limit (stopped at {SCALED_UPPER:.0e} × the CPU term): the rates follow the {term} "
            f"alone and the CPU scores explain none of their differences, so {f} and I are not separately "
            f"identified; check that every platform's CPU score is on one scale (e.g. all CoreMark) "
            f"and that the platforms run the same program, or fix {f} (--{f})"
        )
        if f not in unidentified:
            unidentified.append(f)
    for f in at_bound:
        statements.append(
            f"{f} is at its lower bound 0: these platforms would need {f} < 0 to equalise I more; "
            f"read it as 'not detectably above 0', not as a measured 0"
        )
    if n == k and dof > 0:
        statements.append(
            f"{n} platforms for {k} parameters: the fit is exact but for the bound, so no bootstrap is run; "
            f"fix {' and '.join(at_bound)} (e.g. --{at_bound[0]} 0) to get intervals for the rest"
        )
    if dof == 0:
        statements.append(
            f"exactly determined: {n} platforms for {len(active)} parameter(s), so the fit has no residual — "
            "no spread, no interval and no prediction error can be estimated; add a platform or fix a constant"
        )
    elif dof < 3:
        statements.append(
            f"only {dof} degree(s) of freedom: intervals are wide and rest on the normal-noise "
            "assumption; more platforms make them trustworthy"
        )

    sigma = float(np.sqrt(np.sum(resid**2) / dof)) if dof > 0 else math.nan
    cov = np.zeros((3, 3))
    se = dict.fromkeys(free, math.nan)
    t_int = dict.fromkeys(free, (math.nan, math.nan))
    if dof > 0 and not unidentified:
        # Jacobian in original units for the covariance of (lnI, M, N).
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
            t_int[f] = (
                (math.exp(lo), math.exp(hi)) if f == "lnI" else (max(float(lo), 0.0), float(hi))
            )
    t_int = {("I" if f == "lnI" else f): v for f, v in t_int.items()}
    for f in ("M", "N"):
        lo, hi = t_int.get(f, (math.nan, math.nan))
        est = p_orig[PARAMS.index(f)]
        if (
            f not in at_bound
            and math.isfinite(lo)
            and math.isfinite(hi)
            and (lo <= 0 or hi > 10 * est)
        ):
            unit, scale = ("µs", 1e6) if f == "N" else ("", 1.0)
            statements.append(
                f"{f} is poorly determined by these platforms: its {confidence:.0%} interval runs "
                f"from {lo * scale:.3g} to {hi * scale:.3g}{unit} around {est * scale:.3g}{unit}"
            )

    result = FitResult(
        observations=list(observations),
        free=tuple("I" if f == "lnI" else f for f in free),
        fixed=fixed,
        M=float(p_orig[1]),
        N=float(p_orig[2]),
        I=float(math.exp(p_orig[0])),
        sigma=sigma,
        dof=dof,
        confidence=confidence,
        se={("I" if f == "lnI" else f): v for f, v in se.items()},
        cov=cov,
        intervals={},
        t_intervals=t_int,
        platforms=[
            PlatformFit(
                o.platform,
                float(o.rate),
                float(math.exp(r + th[0])),
                float(o.rate * math.exp(-r)),
                float(r),
            )
            for o, r in zip(observations, resid)
        ],
        loo=[],
        at_bound=tuple(at_bound),
        statements=statements,
        warnings=warnings,
        unidentified=tuple(unidentified),
    )
    # resid = ln I_p − ln I = ln(rate / fitted rate).

    if bootstrap and dof > 0 and n > k and not unidentified:
        _bootstrap(result, prob, th, resid, free, fixed_scaled, dof, bootstrap, confidence, seed)
    else:
        result.intervals = dict.fromkeys(result.free, (math.nan, math.nan))
    if loo:
        result.loo = _leave_one_out(observations, M, N, confidence)
        done = [x for x in result.loo if math.isfinite(x.error)]
        if done:
            worst = max(done, key=lambda x: abs(x.error))
            statements.append(
                f"leave-one-platform-out: predictions off by {result.loo_rms:.1%} (RMS, log scale), "
                f"worst {worst.platform} {worst.error:+.1%}"
            )
        else:
            statements.append(
                f"leave-one-platform-out is impossible: without any one platform, "
                f"{n - 1} remain for {k} parameter(s)"
            )
    return result


def _bootstrap(
    result: FitResult,
    prob: _Problem,
    th: np.ndarray,
    resid: np.ndarray,
    free,
    fixed_scaled,
    dof: int,
    B: int,
    confidence: float,
    seed: int,
) -> None:
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
    scaled = _solve(prob, Z, free, fixed_scaled, th[None, :])
    reps = np.column_stack([scaled[:, 0], scaled[:, 1] * prob.sa / prob.sb, scaled[:, 2] * prob.sa])
    result.boot = reps
    result.boot_residuals = centred
    alpha = 1 - confidence
    out = {}
    for f in free:
        col = reps[:, PARAMS.index(f)]
        lo, hi = np.quantile(col, [alpha / 2, 1 - alpha / 2])
        if f == "lnI":
            out["I"] = (float(math.exp(lo)), float(math.exp(hi)))
        else:
            out[f] = (float(lo), float(hi))
    result.intervals = out


def _leave_one_out(obs: list[Observation], M, N, confidence) -> list[LeaveOneOut]:
    from perflab.model.predict import predict  # predict builds on fit

    k = 1 + (M is None) + (N is None)
    out = []
    for i, o in enumerate(obs):
        rest = obs[:i] + obs[i + 1 :]
        if len(rest) < max(k, 2):
            out.append(
                LeaveOneOut(
                    o.platform,
                    float(o.rate),
                    math.nan,
                    math.nan,
                    math.nan,
                    math.nan,
                    f"{len(rest)} platforms left for {k} parameters",
                )
            )
            continue
        sub = fit(rest, M=M, N=N, bootstrap=0, confidence=confidence, loo=False)
        p = predict(sub, o, confidence=confidence)
        note = "; ".join(s for s in sub.statements if s.startswith("the platforms cannot identify"))
        out.append(
            LeaveOneOut(o.platform, float(o.rate), p.rate, p.low, p.high, p.rate / o.rate - 1, note)
        )
    return out
