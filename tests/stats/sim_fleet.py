"""Simulated experiments on a fleet of devices, with known truth (seeded, vectorised).

Each experiment runs a baseline and a candidate, n runs each, on D boards of one model.
Every board has its own offset, a factor drawn uniformly in [1 − SPREAD, 1 + SPREAD] per
experiment (boards differ by up to 10%), which multiplies every run made on it; the runs'
noise is a family of `sim.py` (5% noise around 100, or heavy right skew). The candidate
changes every run by 1 + δ (δ = 0: A/A).

Where the runs go (the layout, shared by a chunk of CHUNK experiments, so that each
chunk is one batched call):

- ``balanced``: the interleaved plan's n blocks, each run whole on one board (a baseline
  and a candidate run), blocks dealt to boards at random, every board getting at least
  one: each board runs both variants equally often, the boards unequally.
- ``unbalanced``: the variants' runs spread unequally over the boards — the baseline's
  twice as often (RATIO) on the first half of the boards as on the others, the
  candidate's the other way round (variants run one after the other on a pool, or a rerun
  on other boards): 7 and 3 runs of 10 on two boards, 3-3-2-2 against 2-2-3-3 on four;
  every board runs each variant at least once.

Methods: ``devices`` (the device-blocked comparison: auto), ``devices-fixed``,
``inverse-variance`` (each board's own Welch log ratio, combined by inverse-variance
weights: the alternative `devices.py` was chosen over), ``welch``/``auto`` on every run
pooled (the device ignored), ``paired`` by blocks
(balanced layouts only), and the same number of runs on **one board** with the default
method (``one-board``) or Welch (``one-board-welch``): the power to match.
"""

from __future__ import annotations

import functools

import numpy as np
from perflab.stats import special
from perflab.stats.auto import auto_batch
from perflab.stats.devices import device_batch
from perflab.stats.intervals import Intervals
from perflab.stats.paired import paired_batch
from perflab.stats.welch import welch_batch

from tests.stats import sim

#: Boards differ by a factor uniform in [1 − SPREAD, 1 + SPREAD].
SPREAD = 0.05
#: The true change of the power experiments.
DELTA = 0.04
#: ``unbalanced``: a variant's runs this many times as often on one half of the boards.
RATIO = 2.0
#: Experiments that share one layout.
CHUNK = 100
FAMILIES = ("normal", "lognormal", "t3", "bimodal", "contaminated", "skewed")
LAYOUTS = ("balanced", "unbalanced")
METHODS = (
    "devices",
    "devices-fixed",
    "inverse-variance",
    "paired",
    "welch",
    "auto",
    "one-board",
    "one-board-welch",
)


def layout(kind: str, boards: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """The device of each baseline and each candidate run (see the module docstring)."""
    names = [f"router-{i + 1}" for i in range(boards)]
    if kind == "balanced":
        deal = np.concatenate([np.arange(boards), rng.integers(0, boards, n - boards)])
        dev = [names[i] for i in rng.permutation(deal)]
        return dev, dev
    if kind != "unbalanced":
        raise ValueError(kind)
    heavy = np.arange(boards) < boards / 2
    out = []
    for weights in (np.where(heavy, RATIO, 1.0), np.where(heavy, 1.0, RATIO)):
        share = weights / weights.sum()
        counts = np.maximum(1, np.floor(share * n)).astype(int)
        while counts.sum() < n:
            counts[np.argmax(share * n - counts)] += 1
        while counts.sum() > n:
            counts[np.argmax(counts)] -= 1
        out.append([names[i] for i in np.repeat(np.arange(boards), counts)])
    return out[0], out[1]


def experiments(
    family: str,
    kind: str,
    boards: int,
    n: int,
    delta: float,
    count: int,
    seed: int,
    spread: float = SPREAD,
) -> list[tuple[np.ndarray, np.ndarray, list[str], list[str]]]:
    """``count`` experiments in chunks of one layout: (baseline, candidate, devices of the
    baseline's runs, devices of the candidate's), the runs (CHUNK, n) arrays."""
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, count, CHUNK):
        e = min(CHUNK, count - start)
        da, db = layout(kind, boards, n, rng)
        factor = 1 + rng.uniform(-spread, spread, (e, boards))
        a, b = sim.pair(family, rng, e, n, delta)
        ia = np.array([int(d.split("-")[1]) - 1 for d in da])
        ib = np.array([int(d.split("-")[1]) - 1 for d in db])
        out.append((a * factor[:, ia], b * factor[:, ib], da, db))
    return out


def run(method: str, a: np.ndarray, b: np.ndarray, da: list[str], db: list[str]) -> Intervals:
    """Intervals of ``method`` at 95% (see the module docstring)."""
    if method == "devices":
        return device_batch(a, b, da, db)
    if method == "devices-fixed":
        return device_batch(a, b, da, db, test="fixed")
    if method == "paired":
        if da != db:
            raise ValueError("paired needs blocks: balanced layouts only")
        return paired_batch(a, b)
    if method == "inverse-variance":
        return inverse_variance(a, b, da, db)
    if method in ("welch", "one-board-welch"):
        return welch_batch(a, b)
    if method in ("auto", "one-board"):
        return auto_batch(a, b)
    raise ValueError(method)


def inverse_variance(a: np.ndarray, b: np.ndarray, da: list[str], db: list[str]) -> Intervals:
    """Each board's difference of mean logs with its own Welch variance, combined with
    weights 1/variance (Satterthwaite's df); boards with fewer than 2 runs of a variant
    are left out."""
    la, lb = np.log(a), np.log(b)
    est, var, dfs = [], [], []
    for d in sorted(set(da) & set(db)):
        xa, xb = la[:, np.array(da) == d], lb[:, np.array(db) == d]
        if min(xa.shape[1], xb.shape[1]) < 2:
            continue
        va, vb = xa.var(axis=1, ddof=1) / xa.shape[1], xb.var(axis=1, ddof=1) / xb.shape[1]
        est.append(xb.mean(axis=1) - xa.mean(axis=1))
        var.append(va + vb)
        dfs.append((va + vb) ** 2 / (va**2 / (xa.shape[1] - 1) + vb**2 / (xb.shape[1] - 1)))
    w = 1 / np.array(var)
    beta = (w * np.array(est)).sum(axis=0) / w.sum(axis=0)
    se = np.sqrt(1 / w.sum(axis=0))
    df = 1 / (((w / w.sum(axis=0)) ** 2) / np.array(dfs)).sum(axis=0)
    t = special.stdtrit(df, 0.975)
    p = 2 * special.stdtr(df, -np.abs(beta) / se)
    lo, hi = np.expm1(beta - t * se), np.expm1(beta + t * se)
    return Intervals(np.expm1(beta), lo, hi, p, np.exp(la.mean(axis=1)), np.exp(lb.mean(axis=1)))


@functools.cache
def rates(method: str, family: str, kind: str, boards: int, n: int, count: int) -> dict[str, float]:
    """A/A false positives, power and coverage of δ for one configuration (seeded; the
    one-board methods get runs without board offsets)."""
    spread = 0.0 if method.startswith("one-board") else SPREAD
    out: dict[str, float] = {}
    for key, delta in (("false_positive", 0.0), ("power", DELTA)):
        seed = sim.seed_of("fleet", family, kind, boards, n, count, key)
        sig = cover = total = 0
        for a, b, da, db in experiments(family, kind, boards, n, delta, count, seed, spread):
            r = run(method, a, b, da, db)
            check(r)
            sig += int(r.significant.sum())
            cover += int(r.covers(delta).sum())
            total += a.shape[0]
        out[key] = sig / total
        if delta:
            out["coverage"] = cover / total
    return out


def check(r: Intervals) -> None:
    """The invariants of every comparison, in every experiment: a ratio never at −100%,
    significant ⇔ p ≤ 5%, the estimate inside its interval, no internal check fired."""
    assert np.all(~np.isnan(r.low)), "every simulated experiment has an interval"
    assert np.all(r.low[r.scale == "ratio"] > -1)
    assert np.array_equal(r.significant, r.p_value <= 0.05)
    assert np.all((r.low <= r.estimate) & (r.estimate <= r.high))
    notes = set(",".join(r.note).split(","))
    assert not notes & {"disagreement", "estimate_outside", "numerical_range"}, notes
