"""Synthetic run distributions with known truth, for simulation tests (seeded, vectorised).

The original families draw run values around a population mean of 100 with 5% run-to-run
noise (coefficient of variation), shaped as: normal, log-normal (σ = 0.5 on the log scale,
skewness ≈ 1.75: long right tail, like latencies), Student t with 3 degrees of freedom
(heavy tails: occasional wild runs), and bimodal (30% of runs in a second mode 5 within-
mode standard deviations away: e.g. a cache or NUMA placement that sometimes goes wrong).

The families added for "verdicts that are never impossible" (`ALL_FAMILIES`):

- skewed: heavy right skew, always positive — log-normal runs with σ = 1 on the log
  scale (coefficient of variation 131%, skewness 6.2), mean 100: the runs behind the
  quickstart's "−[34.0, 122.0]%".
- contaminated: normal runs (5% noise) of which one in ten, at random, is throttled to
  take twice as long (×2).
- negative: a metric whose values are negative (−100 ± 5%).
- integer: integer counts with many ties (Poisson, mean 20).
- near-zero: values that straddle zero (mean 0, sd 5): a relative change is meaningless,
  the change is in the unit.
- tiny / huge: the normal family times 1e-302 / 1e298 (means 1e-300 / 1e300).

A known true change is applied so that every location (mean, median, any percentile, the
Hodges–Lehmann shift or ratio) changes alike, so one truth serves every method:
- scale (positive families): candidate = (1 + δ) × baseline draw, truth δ; for integer
  counts δ = +100% (× 2 keeps them integers and tied).
- shift (negative): candidate = baseline draw + δ·|population mean|, truth δ (a rise).
- shift in the unit (near-zero): candidate = baseline draw + 2.0, truth 2.0 in the unit;
  rows that came out on the ``relative`` scale are compared after multiplying their
  bounds back by |baseline location|.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy import stats as sps

MEAN = 100.0
CV = 0.05
LOGNORMAL_SIGMA = 0.5
BIMODAL_P = 0.3  # share of runs in the second mode
BIMODAL_W = 0.2  # within-mode sd, in units of the distance between modes
SKEW_SIGMA = 1.0  # the skewed family's σ on the log scale
CONTAMINATION = 0.1  # share of throttled runs in the contaminated family
THROTTLE = 2.0  # a throttled run takes this many times as long
POISSON_MEAN = 20.0
NEAR_ZERO_SD = 5.0
NEAR_ZERO_SHIFT = 2.0
TINY, HUGE = 1e-302, 1e298

#: The families with mean 100 and 5% noise (also used by the adaptive simulation).
FAMILIES = ("normal", "lognormal", "t3", "bimodal")
#: Every family of the validation tables.
ALL_FAMILIES = FAMILIES + (
    "skewed",
    "contaminated",
    "negative",
    "integer",
    "near-zero",
    "tiny",
    "huge",
)
#: Families whose runs are all positive (the ``ratio`` scale applies).
POSITIVE = (
    "normal",
    "lognormal",
    "t3",
    "bimodal",
    "skewed",
    "contaminated",
    "integer",
    "tiny",
    "huge",
)


def _bimodal_std() -> tuple[float, float]:
    m = BIMODAL_P
    v = BIMODAL_P * (1 - BIMODAL_P) + BIMODAL_W**2
    return m, float(np.sqrt(v))


def draw(family: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Run values of ``family`` (see the module docstring)."""
    if family == "normal":
        z = rng.standard_normal(shape)
    elif family == "lognormal":
        s = LOGNORMAL_SIGMA
        x = np.exp(s * rng.standard_normal(shape))
        z = (x - np.exp(s * s / 2)) / np.sqrt((np.exp(s * s) - 1) * np.exp(s * s))
    elif family == "t3":
        z = rng.standard_t(3, shape) / np.sqrt(3.0)
        bad = z <= -1 / CV  # a non-positive run (p ≈ 1e-5): redraw, run values stay positive
        while bad.any():
            z[bad] = rng.standard_t(3, int(bad.sum())) / np.sqrt(3.0)
            bad = z <= -1 / CV
    elif family == "bimodal":
        m, sd = _bimodal_std()
        y = (rng.random(shape) < BIMODAL_P) + BIMODAL_W * rng.standard_normal(shape)
        z = (y - m) / sd
    elif family == "skewed":
        s = SKEW_SIGMA
        return MEAN * np.exp(s * rng.standard_normal(shape) - s * s / 2)
    elif family == "contaminated":
        x = MEAN * (1 + CV * rng.standard_normal(shape))
        return np.where(rng.random(shape) < CONTAMINATION, THROTTLE * x, x)
    elif family == "negative":
        return -draw("normal", rng, shape)
    elif family == "integer":
        return rng.poisson(POISSON_MEAN, shape).astype(np.float64)
    elif family == "near-zero":
        return NEAR_ZERO_SD * rng.standard_normal(shape)
    elif family == "tiny":
        return draw("normal", rng, shape) * TINY
    elif family == "huge":
        return draw("normal", rng, shape) * HUGE
    else:
        raise ValueError(family)
    return MEAN * (1 + CV * z)


def _cdf_z(family: str, z: float) -> float:
    if family == "normal":
        return float(sps.norm.cdf(z))
    if family == "t3":
        return float(sps.t.cdf(z * np.sqrt(3.0), 3))
    if family == "lognormal":
        s = LOGNORMAL_SIGMA
        x = z * np.sqrt((np.exp(s * s) - 1) * np.exp(s * s)) + np.exp(s * s / 2)
        return float(sps.lognorm.cdf(x, s)) if x > 0 else 0.0
    m, sd = _bimodal_std()
    y = z * sd + m
    return float(
        (1 - BIMODAL_P) * sps.norm.cdf(y / BIMODAL_W)
        + BIMODAL_P * sps.norm.cdf((y - 1) / BIMODAL_W)
    )


def population_quantile(family: str, q: float) -> float:
    z = optimize.brentq(lambda z: _cdf_z(family, z) - q, -20, 20, xtol=1e-12)
    return MEAN * (1 + CV * z)


def change(family: str, method: str = "") -> tuple[float, str]:
    """(true change, its unit) of the known-change experiments of ``family``:
    ``"fraction"`` (a relative change) or ``"unit"`` (the metric's own unit)."""
    if family == "integer":
        return 1.0, "fraction"
    if family == "near-zero":
        return NEAR_ZERO_SHIFT, "unit"
    return DELTA_BY_METHOD.get(method, DELTA), "fraction"


def pair(
    family: str,
    rng: np.random.Generator,
    experiments: int,
    n: int,
    delta: float = 0.0,
    model: str = "scale",
    m: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) arrays of shape (experiments, n) / (experiments, m).

    model: ``"scale"`` (positive families; integer counts are doubled for any δ > 0),
    ``"shift"`` (candidate + δ × population median), or ``"auto"`` (the family's own model,
    see `change`)."""
    a = draw(family, rng, (experiments, n))
    b = draw(family, rng, (experiments, m or n))
    if model == "auto":
        model = "scale" if family in POSITIVE else "shift"
    if family == "integer":
        return a, (2 * b if delta else b)
    if family == "near-zero":
        return a, b + delta
    if family == "negative":
        return a, b + delta * MEAN
    if model == "scale":
        b = b * (1 + delta)
    elif model == "shift":
        b = b + delta * population_quantile(family, 0.5)
    else:
        raise ValueError(model)
    return a, b


# --- running methods on simulated experiments -------------------------------------------

import functools  # noqa: E402
import zlib  # noqa: E402

from perflab.stats.auto import auto_batch  # noqa: E402
from perflab.stats.bootstrap import bootstrap_batch  # noqa: E402
from perflab.stats.intervals import Intervals  # noqa: E402
from perflab.stats.mannwhitney import mannwhitney_batch  # noqa: E402
from perflab.stats.paired import paired_batch  # noqa: E402
from perflab.stats.welch import welch_batch  # noqa: E402

#: Simulated experiments per (method, family, n) and per question (A/A, coverage).
EXPERIMENTS = 2000
#: Known true change for coverage.
DELTA = 0.10
#: Changes per method where one differs (none: Welch's default ``auto`` interval switches to
#: Fieller's where the difference interval would under-cover, so +10% is checked for all).
DELTA_BY_METHOD: dict[str, float] = {}
#: Resamples per bootstrap interval in simulations (the default is 10,000: fewer resamples add
#: Monte-Carlo noise to the bounds, which can only lower coverage, so this is conservative).
SIM_RESAMPLES = 2000
#: Block-to-block drift (sd, fraction) in the data given to the paired method.
BLOCK_DRIFT = 0.03

METHODS = (
    "auto",
    "welch",
    "welch-fieller",
    "bootstrap-mean",
    "bootstrap-median",
    "mannwhitney",
    "paired",
)
#: Every method and option of the validation tables (the forced difference interval too).
ALL_METHODS = METHODS + ("welch-difference", "mannwhitney-shift")


def seed_of(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def run_method(method: str, a: np.ndarray, b: np.ndarray, rng, confidence=0.95) -> Intervals:
    """Batched intervals of ``method`` (the registry's default options unless named).

    rng: a Generator or an integer seed; with an integer the bootstrap's resamples are the
    same for any ``confidence`` (one level, or one per row), as in `Bootstrap.compare`."""
    if method == "auto":
        return auto_batch(a, b, confidence)
    if method == "welch":
        return welch_batch(a, b, confidence)
    if method == "welch-difference":
        return welch_batch(a, b, confidence, interval="difference")
    if method == "welch-fieller":
        return welch_batch(a, b, confidence, interval="fieller")
    if method == "bootstrap-mean":
        return bootstrap_batch(
            a, b, confidence, statistic="mean", resamples=SIM_RESAMPLES, seed=rng
        )
    if method == "bootstrap-median":
        return bootstrap_batch(
            a, b, confidence, statistic="median", resamples=SIM_RESAMPLES, seed=rng
        )
    if method == "mannwhitney":
        return mannwhitney_batch(a, b, confidence)  # scale="auto": ratio for positive runs
    if method == "mannwhitney-shift":
        return mannwhitney_batch(a, b, confidence, scale="shift")
    if method == "paired":
        return paired_batch(a, b, confidence)
    raise ValueError(method)


def experiment(method: str, family: str, rng, n: int, delta: float, experiments: int = EXPERIMENTS):
    """(baseline, candidate) for ``method``: block drift added for paired (multiplicative,
    mean 1; an integer shift, mean 0, for integer counts); shift model for the HL shift on
    the original families, the family's own model otherwise."""
    model = "shift" if (method == "mannwhitney-shift" and family in FAMILIES) else "auto"
    a, b = pair(family, rng, experiments, n, delta, model)
    if method == "paired":
        if family == "integer":
            blk = np.rint(POISSON_MEAN * BLOCK_DRIFT * rng.standard_normal((experiments, n)))
            a, b = a + blk, b + blk
        else:
            blk = 1 + BLOCK_DRIFT * rng.standard_normal((experiments, n))
            a, b = a * blk, b * blk
    return a, b


def covers(res: Intervals, truth: float, unit: str) -> np.ndarray:
    """Boolean (E,): the interval holds the truth (within rounding: with discrete data an
    end can be the truth itself, an observed difference computed to the last bit); for a
    truth in the unit, rows on the ``relative`` scale are multiplied back by |baseline
    location|."""
    k = (
        np.ones_like(res.low)
        if unit == "fraction"
        else np.where(res.scale == "relative", np.abs(res.baseline), 1.0)
    )
    tol = 1e-9 * abs(truth) + 1e-12
    with np.errstate(invalid="ignore"):
        return (res.low * k <= truth + tol) & (truth - tol <= res.high * k)


@functools.cache
def simulate(method: str, family: str, n: int) -> dict:
    """A/A and known-change experiments of one configuration, with their intervals at 95%.

    Returns {"aa": (a, b, Intervals), "change": (a, b, Intervals), "truth", "unit", "seeds"}:
    the bootstrap's integer seeds, so that the same resamples can be drawn at other levels."""
    rng = np.random.default_rng(seed_of(method, family, n))
    truth, unit = change(family, method)
    seeds = (seed_of("boot-aa", method, family, n), seed_of("boot-change", method, family, n))
    a, b = experiment(method, family, rng, n, 0.0)
    aa = (a, b, run_method(method, a, b, seeds[0]))
    a, b = experiment(method, family, rng, n, truth)
    ch = (a, b, run_method(method, a, b, seeds[1]))
    return {"aa": aa, "change": ch, "truth": truth, "unit": unit, "seeds": seeds}


@functools.cache
def error_rates(method: str, family: str, n: int) -> dict[str, float]:
    """A/A false-positive rate, coverage of the known change, and the share of undefined
    intervals (a method refusing too few runs), for one configuration."""
    s = simulate(method, family, n)
    aa, ch = s["aa"][2], s["change"][2]
    return {
        "false_positive": float(np.mean(aa.significant)),
        "p_below_alpha": float(np.mean(aa.p_value <= 0.05)),
        "coverage": float(np.mean(covers(ch, s["truth"], s["unit"]))),
        "delta": s["truth"],
        "unit": s["unit"],
        "undefined": float(np.mean(np.isnan(aa.low))),
        "undefined_change": float(np.mean(np.isnan(ch.low))),
    }


@functools.cache
def power(method: str, n: int = 10, cv: float = 0.02, change: float = 0.03) -> float:
    """Share of experiments (normal runs, noise ``cv``) in which a true ``change`` is declared."""
    rng = np.random.default_rng(seed_of("power", method, n, cv, change))
    a = MEAN * (1 + cv * rng.standard_normal((EXPERIMENTS, n)))
    b = MEAN * (1 + change) * (1 + cv * rng.standard_normal((EXPERIMENTS, n)))
    return float(np.mean(run_method(method, a, b, rng).significant))


# --- series of versions with planted shifts (change points) -----------------------------

#: Versions per simulated series with planted shifts; runs per version are drawn uniformly
#: from SERIES_RUNS (inclusive), so versions have different numbers of runs.
SERIES_VERSIONS = 60
SERIES_RUNS = (3, 8)
#: Planted shifts: 0–3 per series, sizes uniform in SHIFT_SIZES (either sign), at least
#: SHIFT_GAP versions apart and SHIFT_EDGE versions from either end.
MAX_SHIFTS = 3
SHIFT_SIZES = (0.02, 0.20)
SHIFT_GAP = 10
SHIFT_EDGE = 5
#: Flat series for false alarms: this many versions each.
FLAT_VERSIONS = 100
#: A slow drift: the level rises by this fraction per version (0.05%).
DRIFT = 0.0005
#: A detection within this many versions of a planted shift finds it.
TOLERANCE = 2
#: The families of the change-point tables: "rounded" is the normal family rounded to
#: integers (a unit of 1% of the mean: many ties), "drift" the normal family on a slow
#: drift (DRIFT per version) under the planted shifts.
SERIES_FAMILIES = (
    "normal",
    "lognormal",
    "t3",
    "bimodal",
    "skewed",
    "contaminated",
    "negative",
    "integer",
    "rounded",
    "drift",
)


def plant(rng: np.random.Generator, versions: int, count: int) -> list[tuple[int, float]]:
    """``count`` shifts (index of the first version at the new level, relative size) at
    least SHIFT_GAP apart and SHIFT_EDGE from the ends, sizes uniform in SHIFT_SIZES."""
    slots = np.arange(SHIFT_EDGE, versions - SHIFT_EDGE + 1)
    while True:
        at = np.sort(rng.choice(slots, count, replace=False))
        if count < 2 or np.min(np.diff(at)) >= SHIFT_GAP:
            break
    size = rng.uniform(*SHIFT_SIZES, count) * rng.choice([-1.0, 1.0], count)
    return [(int(a), float(s)) for a, s in zip(at, size)]


def version_series(
    family: str,
    rng: np.random.Generator,
    versions: int,
    shifts: list[tuple[int, float]],
    drift: float = 0.0,
    runs: tuple[int, int] = SERIES_RUNS,
) -> list[np.ndarray]:
    """Every version's runs: the family's runs times the version's level (the product of
    1 + size of the shifts before it, times 1 + drift·version). Negative values move by
    (level − 1)·|mean| (a rise is +), integer counts are Poisson of mean level·20, the
    rounded family rounds after scaling (ties stay ties)."""
    level = np.ones(versions)
    for at, size in shifts:
        level[at:] *= 1 + size
    level *= 1 + drift * np.arange(versions)
    if family == "drift":
        family, level = "normal", level * (1 + DRIFT * np.arange(versions))
    lengths = rng.integers(runs[0], runs[1] + 1, versions)
    out = []
    for v, n in enumerate(lengths):
        if family == "integer":
            out.append(rng.poisson(POISSON_MEAN * level[v], int(n)).astype(np.float64))
        elif family == "negative":
            out.append(draw("negative", rng, (int(n),)) + (level[v] - 1) * MEAN)
        elif family == "rounded":
            out.append(np.round(draw("normal", rng, (int(n),)) * level[v]))
        else:
            out.append(draw(family, rng, (int(n),)) * level[v])
    return out


def match(detected: list[int], planted: list[int], tolerance: int = TOLERANCE) -> list[int]:
    """Signed location errors (detected − planted) of the planted shifts found, each found
    by at most one detection: the nearest pairs within ``tolerance`` first."""
    pairs = sorted((abs(d - p), d, p) for d in detected for p in planted if abs(d - p) <= tolerance)
    used_d: set[int] = set()
    used_p: set[int] = set()
    errors = []
    for _, d, p in pairs:
        if d not in used_d and p not in used_p:
            used_d.add(d)
            used_p.add(p)
            errors.append(d - p)
    return errors
