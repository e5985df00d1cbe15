"""Van Elteren's stratified rank test, and the stratified Hodges–Lehmann shift and interval
that invert it: Mann–Whitney within each device, combined across devices.

Assumption: on each device the candidate's runs are the baseline's shifted by one common
θ (on the working scale: the log of positive runs, where θ is a ratio); nothing about the
runs' shape, and the devices may sit at different levels. Only pairs of runs made on the
same device are compared: S(θ) = Σ_d w_d·U_d(θ), U_d the number of (baseline, candidate)
pairs of device d whose difference exceeds θ (ties count ½), with van Elteren's weights
w_d = 1/(N_d + 1), which give each device's ranks a share by its size (locally most
powerful for a common shift). Under no change S has mean μ = Σ w_d·n_d·m_d/2 and variance
V = Σ w_d²·n_d·m_d·((N_d + 1) − T_d/(N_d(N_d − 1)))/12 (T_d: Σ(t³ − t) over the device's
tied values); the test is normal with a continuity correction of half the smallest weight.

S is a step function that falls as θ grows, so the set of θ it does not reject is an
interval, read off the weighted, sorted differences; the estimate is their weighted median
(where S crosses μ), and the p-value is the smallest α at which the interval excludes 0 —
so interval and test agree at every level by construction. At a tie exactly at θ = 0 the
test is read conservatively (the tied pairs count on the side that keeps 0 in).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray, IntArray
from perflab.stats.fixed_effects import Layout
from perflab.stats.mannwhitney import EXACT_MAX_RUNS, u_cdf


class Pairs(NamedTuple):
    """The within-device pairs of runs of a layout (`pairs`), one element per pair."""

    baseline_run: IntArray  # index among the baseline's runs
    candidate_run: IntArray  # index among the candidate's runs
    weight: FloatArray  # van Elteren's w_d of the pair's device


def pairs(layout: Layout) -> Pairs:
    """The within-device (baseline, candidate) pairs of a two-variant layout: indices into
    the baseline's and the candidate's runs, and each pair's weight w_d."""
    a_idx, b_idx, w = [], [], []
    base = layout.variant == 0
    where_a = np.cumsum(base) - 1  # a run's index among the baseline's runs
    where_b = np.cumsum(~base) - 1
    for d in range(len(layout.devices)):
        on = layout.device == d
        ia, ib = where_a[on & base], where_b[on & ~base]
        if ia.size and ib.size:
            a_idx.append(np.repeat(ia, ib.size))
            b_idx.append(np.tile(ib, ia.size))
            w.append(np.full(ia.size * ib.size, 1.0 / (ia.size + ib.size + 1)))
    if not a_idx:
        return Pairs(np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0))
    return Pairs(np.concatenate(a_idx), np.concatenate(b_idx), np.concatenate(w))


def _tie_sums(x: FloatArray) -> FloatArray:
    """(E,) Σ(t³ − t) over the groups of tied values of each row of (E, n)."""
    e, n = x.shape
    if n < 2:
        return np.zeros(e)
    s = np.sort(x, axis=1)
    start = np.concatenate([np.ones((e, 1), bool), s[:, 1:] != s[:, :-1]], axis=1)
    group = np.cumsum(start, axis=1) - 1 + n * np.arange(e)[:, None]
    t = np.bincount(group.ravel(), minlength=e * n).reshape(e, n).astype(float)
    out: FloatArray = (t**3 - t).sum(axis=1)
    return out


def null_moments(raw_a: FloatArray, raw_b: FloatArray, layout: Layout) -> tuple[float, FloatArray]:
    """(μ, V): the mean and the (E,) tie-corrected variance of S under no change."""
    base = layout.variant == 0
    mu = 0.0
    var = np.zeros(raw_a.shape[0])
    for d in range(len(layout.devices)):
        on = layout.device == d
        ma, mb = on[base], on[~base]
        n, m = int(ma.sum()), int(mb.sum())
        if not (n and m):
            continue
        big = n + m
        w = 1.0 / (big + 1)
        mu += w * n * m / 2
        ties = _tie_sums(np.concatenate([raw_a[:, ma], raw_b[:, mb]], axis=1))
        var += w * w * n * m / 12.0 * ((big + 1) - ties / (big * (big - 1)))
    return mu, var


#: Largest support of S (before equal sums merge) for its exact distribution.
EXACT_MAX_SUPPORT = 200_000


def cells(layout: Layout) -> tuple[tuple[int, int], ...]:
    """(n_a, n_b) of each device that ran both variants."""
    c = layout.counts()
    return tuple((int(n), int(m)) for n, m in c[:, :2] if n and m)


@functools.lru_cache(maxsize=64)
def exact_null(strata: tuple[tuple[int, int], ...]) -> tuple[FloatArray, FloatArray] | None:
    """(support, cdf) of S under no change without ties: the convolution of each device's
    U distribution (`mannwhitney.u_cdf`), weighted; None when too large to hold."""
    by_size: dict[int, FloatArray] = {}
    for n, m in strata:
        if max(n, m) > EXACT_MAX_RUNS:
            return None
        pmf = np.diff(u_cdf(n, m), prepend=0.0)
        known = by_size.get(n + m)
        by_size[n + m] = pmf if known is None else np.convolve(known, pmf)
    if math.prod(p.size for p in by_size.values()) > EXACT_MAX_SUPPORT:
        return None
    support, prob = np.zeros(1), np.ones(1)
    for size, pmf in by_size.items():
        support = (support[:, None] + np.arange(pmf.size)[None, :] / (size + 1)).ravel()
        prob = (prob[:, None] * pmf[None, :]).ravel()
        order = np.argsort(support, kind="stable")
        support, prob = support[order], prob[order]
        new = np.concatenate([[True], np.diff(support) > 1e-9 * max(float(support[-1]), 1e-300)])
        prob = np.asarray(np.bincount(np.cumsum(new) - 1, weights=prob), dtype=np.float64)
        support = support[new]
    return support, np.minimum(np.cumsum(prob), 1.0)


def _p_of(
    r: FloatArray, mu: float, sd: FloatArray, cc: float, exact: tuple[FloatArray, FloatArray] | None
) -> FloatArray:
    """Two-sided p-values of S = r, (E, J): exact (rows without ties, ``sd`` NaN there), or
    normal with the continuity correction ``cc``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.maximum(np.abs(r - mu) - cc, 0.0) / sd[:, None]
        p = np.where(sd[:, None] > 0, 2 * special.ndtr(-z), np.where(np.abs(r - mu) > cc, 0, 1.0))
    if exact is not None:
        support, cdf = exact
        tol = 1e-9 * max(float(support[-1]), 1e-300)
        below = np.concatenate([[0.0], cdf])
        at_most = below[np.searchsorted(support, r + tol, side="right")]
        at_least = 1 - below[np.searchsorted(support, r - tol, side="left")]
        p_exact = 2 * np.minimum(at_most, at_least)
        p = np.where(np.isnan(sd)[:, None], p_exact, p)
    out: FloatArray = np.minimum(p, 1.0)
    return out


class RankShift(NamedTuple):
    """The common shift θ of each row on the working scale (`van_elteren`), each (E,)."""

    estimate: FloatArray
    low: FloatArray  # NaN where the interval is unbounded at this level
    high: FloatArray
    p_value: FloatArray


def van_elteren(
    xa: FloatArray,
    xb: FloatArray,
    raw_a: FloatArray,
    raw_b: FloatArray,
    layout: Layout,
    alpha: FloatArray,
) -> RankShift:
    """(estimate, low, high, p) of the common shift θ on the working scale, for E rows:
    xa (E, n_a), xb (E, n_b) working values, raw_a/raw_b the runs (ties are judged on
    them), alpha (E,). NaN bounds where the interval is unbounded at this level (too
    few pairs of runs on a device)."""
    ia, ib, w = pairs(layout)
    e, k = xa.shape[0], w.size
    if k == 0:
        nan = np.full(e, np.nan)
        return RankShift(nan, nan.copy(), nan.copy(), nan.copy())
    diff = xb[:, ib] - xa[:, ia]
    order = np.argsort(diff, axis=1, kind="stable")
    ds = np.take_along_axis(diff, order, axis=1)
    total = float(w.sum())
    # r[:, j]: weight of the pairs after the first j sorted differences (S just above them)
    r = np.concatenate([np.full((e, 1), total), total - np.cumsum(w[order], axis=1)], axis=1)
    r[:, -1] = 0.0
    mu, var = null_moments(raw_a, raw_b, layout)
    exact = exact_null(cells(layout))
    tied = _tie_sums(np.concatenate([raw_a, raw_b], axis=1)) > 0
    sd = np.where(tied | (exact is None), np.sqrt(var), np.nan)
    p_r = _p_of(r, mu, sd, 0.5 * float(w.min()), exact)
    # the accepted j (p > α) are a run, p rising towards the weighted median and falling after
    ok = p_r > alpha[:, None]
    some = ok.any(axis=1)
    j_lo = np.argmax(ok, axis=1)
    j_hi = k - np.argmax(ok[:, ::-1], axis=1)
    padded = np.concatenate([np.full((e, 1), np.nan), ds, np.full((e, 1), np.nan)], axis=1)
    rows = np.arange(e)
    low = np.where(some, padded[rows, j_lo], np.nan)
    high = np.where(some, padded[rows, j_hi + 1], np.nan)
    # p: the smallest α at which [low, high] excludes 0 (ties at 0 keep it in)
    r_le = r[rows, np.sum(ds <= 0, axis=1)]
    r_lt = r[rows, np.sum(ds < 0, axis=1)]
    side = np.where(r_le > mu, r_le, np.where(r_lt < mu, r_lt, mu))
    p = np.where(side == mu, 1.0, _p_of(side[:, None], mu, sd, 0.5 * float(w.min()), exact)[:, 0])
    return RankShift(_weighted_median(ds, r, mu, total), low, high, p)


def _weighted_median(ds: FloatArray, r: FloatArray, mu: float, total: float) -> FloatArray:
    """Where S crosses μ: the first sorted difference at which the weight above falls to μ
    or below (the midpoint with the next one when it equals μ exactly)."""
    e, k = ds.shape
    if k == 0:
        return np.full(e, np.nan)
    tol = 1e-12 * total
    j = np.clip(np.sum(r > mu + tol, axis=1), 1, k)
    rows = np.arange(e)
    at = ds[rows, j - 1]
    exact = np.abs(r[rows, j] - mu) <= tol
    nxt = ds[rows, np.minimum(j, k - 1)]
    out: FloatArray = np.where(exact & (j < k), (at + nxt) / 2, at)
    return out
