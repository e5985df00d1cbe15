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
is said in `FitResult.statements` rather than hidden behind a number. The scaled
problem and its bounded solver are in solver.py, the intervals in intervals.py.
"""

from __future__ import annotations

import math

import numpy as np

from perflab.errors import InputError
from perflab.model.fit_result import FitResult, LeaveOneOut, PlatformFit
from perflab.model.intervals import bootstrap_intervals, t_intervals
from perflab.model.observations import Observation, check
from perflab.model.solver import PARAMS, SCALED_UPPER, ScaledProblem, solve, starts

#: Singular-value ratio below which a parameter combination counts as unidentified.
IDENTIFIABILITY_RTOL = 1e-7


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
    fixed, free = _parameters(observations, M, N, confidence)
    n, k = len(observations), len(free)
    prob = ScaledProblem(observations)
    fixed_scaled = prob.scaled_constants(fixed)
    th = solve(prob, prob.z, free, fixed_scaled, starts(free))[0]
    p_orig = prob.to_orig(th)

    t = prob.a + th[1] * prob.b + th[2]
    resid = np.log(t) + prob.z - th[0]  # ln I_p − ln I = ln(rate / fitted rate)
    at_bound, at_upper = _at_bounds(th, free)
    active = tuple(f for f in free if f not in at_bound)
    dof = n - len(active)

    statements: list[str] = []
    unidentified = _unidentified(prob, t, free, at_upper, statements)
    _bound_statements(at_upper, at_bound, unidentified, statements)
    _design_statements(n, k, len(active), dof, at_bound, statements)

    sigma = float(np.sqrt(np.sum(resid**2) / dof)) if dof > 0 else math.nan
    cov, se, t_int = t_intervals(
        observations,
        prob,
        t,
        free,
        active,
        p_orig,
        sigma,
        dof,
        confidence,
        identified=not unidentified,
    )
    t_int = {("I" if f == "lnI" else f): v for f, v in t_int.items()}
    _poorly_determined(t_int, p_orig, at_bound, confidence, statements)

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
        platforms=_platform_fits(observations, resid, th),
        loo=[],
        at_bound=tuple(at_bound),
        statements=statements,
        warnings=[],
        unidentified=tuple(unidentified),
    )
    if bootstrap and dof > 0 and n > k and not unidentified:
        result.intervals, result.boot, result.boot_residuals = bootstrap_intervals(
            prob, th, resid, free, fixed_scaled, dof, bootstrap, confidence, seed
        )
    else:
        result.intervals = dict.fromkeys(result.free, (math.nan, math.nan))
    if loo:
        result.loo = _leave_one_out(observations, M, N, confidence)
        statements.append(_loo_statement(result, n, k))
    return result


def _at_bounds(th: np.ndarray, free: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(free constants at their lower bound 0, those at the upper bound) of a solution."""
    at_bound = tuple(f for f in free if f != "lnI" and th[PARAMS.index(f)] <= 1e-12)
    at_upper = tuple(
        f for f in free if f != "lnI" and th[PARAMS.index(f)] >= SCALED_UPPER * (1 - 1e-9)
    )
    return at_bound, at_upper


def _parameters(
    observations: list[Observation], M: float | None, N: float | None, confidence: float
) -> tuple[dict[str, float], tuple[str, ...]]:
    """(constants given, parameters to estimate) of a fit, its inputs checked: InputError
    for bad values or fewer platforms than the free parameters need."""
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
    n, k = len(observations), len(free)
    if n < k or n < 2:
        shown = ", ".join("I" if f == "lnI" else f for f in free)
        fixable = " or ".join(f for f in free if f != "lnI")
        raise InputError(
            f"fewer platforms ({n}) than parameters to estimate ({k}: {shown}): add platforms"
            + (f" or fix {fixable} (--M/--N)" if fixable else "")
            if n < k
            else f"need at least 2 platforms to fit, got {n}"
        )
    return fixed, free


def _unidentified(
    prob: ScaledProblem,
    t: np.ndarray,
    free: tuple[str, ...],
    at_upper: tuple[str, ...],
    statements: list[str],
) -> list[str]:
    """The constants the data cannot tell apart, said in ``statements``.

    Rank of the (column-normalised) Jacobian of all free parameters (a bound-pinned one
    included: the bound must not hide a confounding).
    """
    n = t.size
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
    return unidentified


def _bound_statements(
    at_upper: tuple[str, ...],
    at_bound: tuple[str, ...],
    unidentified: list[str],
    statements: list[str],
) -> None:
    """What a constant at its upper or lower bound means; one at the upper bound joins
    ``unidentified``."""
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


def _design_statements(
    n: int, k: int, active: int, dof: int, at_bound: tuple[str, ...], statements: list[str]
) -> None:
    """What too few platforms for the parameters (few degrees of freedom) leave out."""
    if n == k and dof > 0:
        statements.append(
            f"{n} platforms for {k} parameters: the fit is exact but for the bound, so no bootstrap is run; "
            f"fix {' and '.join(at_bound)} (e.g. --{at_bound[0]} 0) to get intervals for the rest"
        )
    if dof == 0:
        statements.append(
            f"exactly determined: {n} platforms for {active} parameter(s), so the fit has no residual — "
            "no spread, no interval and no prediction error can be estimated; add a platform or fix a constant"
        )
    elif dof < 3:
        statements.append(
            f"only {dof} degree(s) of freedom: intervals are wide and rest on the normal-noise "
            "assumption; more platforms make them trustworthy"
        )


def _poorly_determined(
    t_int: dict[str, tuple[float, float]],
    p_orig: np.ndarray,
    at_bound: tuple[str, ...],
    confidence: float,
    statements: list[str],
) -> None:
    """Say so for M or N whose t interval reaches 0 or ten times the estimate."""
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


def _platform_fits(
    observations: list[Observation], resid: np.ndarray, th: np.ndarray
) -> list[PlatformFit]:
    return [
        PlatformFit(
            o.platform,
            float(o.known_rate),
            float(math.exp(r + th[0])),
            float(o.known_rate * math.exp(-r)),
            float(r),
        )
        for o, r in zip(observations, resid)
    ]


def _loo_statement(result: FitResult, n: int, k: int) -> str:
    """How well the leave-one-platform-out predictions did, or why there are none."""
    done = [x for x in result.loo if math.isfinite(x.error)]
    if done:
        worst = max(done, key=lambda x: abs(x.error))
        return (
            f"leave-one-platform-out: predictions off by {result.loo_rms:.1%} (RMS, log scale), "
            f"worst {worst.platform} {worst.error:+.1%}"
        )
    return (
        f"leave-one-platform-out is impossible: without any one platform, "
        f"{n - 1} remain for {k} parameter(s)"
    )


def _leave_one_out(
    obs: list[Observation], M: float | None, N: float | None, confidence: float
) -> list[LeaveOneOut]:
    from perflab.model.prediction import predict  # predict builds on fit

    k = 1 + (M is None) + (N is None)
    out = []
    for i, o in enumerate(obs):
        rest = obs[:i] + obs[i + 1 :]
        if len(rest) < max(k, 2):
            out.append(
                LeaveOneOut(
                    o.platform,
                    float(o.known_rate),
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
            LeaveOneOut(
                o.platform,
                float(o.known_rate),
                p.rate,
                p.low,
                p.high,
                p.rate / o.known_rate - 1,
                note,
            )
        )
    return out
