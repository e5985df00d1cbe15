"""Checks of test_validation.py, one per (method, family, n).

Error rates and invariants of every method, by simulation (seeded: deterministic).

For each method × run distribution (`sim.ALL_FAMILIES`) × runs per variant (5, 10, 30):
2,000 A/A experiments (both variants from one distribution) and 2,000 with a known true
change (+10%; +100% for integer counts, which doubling keeps integer; +2.0 in the unit
for values straddling zero). See `sim.py` for the families and the change models.

Invariants, asserted in every single experiment:
(a) for runs that are all positive the change is a ratio and no bound reaches −100%;
(b) significant ⇔ the interval excludes 0 ⇔ p ≤ 0.05 (no correction here; every
    correction is in test_agreement.py), with no internal check having fired;
(c) the estimate lies inside its interval.

Rates (issue 4), with tolerances from the binomial standard error of 2,000 experiments,
SE = √(0.05·0.95/2000) = 0.49 points: the A/A false-positive rate ≤ 5% + 3·SE = 6.46%,
and coverage of the true change ≥ 95% − 3·SE = 93.54%. On the original four families
also: false positives ≥ 3% and coverage ≤ 98% from n = 10 (an over-cautious method wastes
machine time; for the registry's default options). Documented exceptions are listed in
`EXCEPTIONS` and asserted as such, so that none can hide; a method that cannot give a trustworthy interval refuses instead
(bootstrap of a median below 8 runs), and that is asserted too.
"""

from __future__ import annotations

import math

import numpy as np
from perflab.stats.bootstrap import min_runs
from perflab.stats.statistic import parse_statistic

from tests.stats import sim

SE = math.sqrt(0.05 * 0.95 / sim.EXPERIMENTS)
MAX_FALSE_POSITIVE = 0.05 + 3 * SE
MIN_COVERAGE = 0.95 - 3 * SE


def cases(families):
    return [
        (method, family, n)
        for method in sim.ALL_METHODS
        for family in families
        for n in (5, 10, 30)
    ]


#: (method, family, n or None for all) → why the rate bound does not hold, and what is
#: asserted instead. Each is documented in the method's module and in the README table.
EXCEPTIONS = {
    # The bootstrap of a ratio of means when one run in ten is throttled: when the throttled
    # runs inflate the baseline's mean, the ratio's spread shrinks with it (the committed
    # implementation had the same 6.75%); Welch (5.0% on the same runs) and Mann–Whitney keep it.
    ("bootstrap-mean", "contaminated", 30): ("false_positive", 0.075),
    # The forced difference interval ignores the baseline mean's uncertainty and under-covers
    # changes, the more so the larger (≈ 93.5% at +10%, 88% at +100% here); compare() warns
    # (baseline_uncertainty); the default "auto" switches to Fieller's there and does not.
    ("welch-difference", None, None): ("coverage", 0.925),
    ("welch-difference", "integer", None): ("coverage", 0.85),
    # The HL shift over an estimated median, likewise (documented in mannwhitney.py; warns);
    # and doubling integer counts is not a shift: the truth of the shift model does not apply.
    ("mannwhitney-shift", None, 30): ("coverage", 0.925),
    ("mannwhitney-shift", "integer", None): ("coverage", 0.0),
}


def _exception(method, family, n):
    """The most lenient documented exception that applies, or None."""
    found = [
        v
        for (m, f, k), v in EXCEPTIONS.items()
        if m == method and f in (None, family) and k in (None, n)
    ]
    return min(found, key=lambda v: v[1]) if found else None


def _refuses(method: str, n: int) -> bool:
    return method == "bootstrap-median" and n < min_runs(parse_statistic("median"))


def check_invariants(method, family, n):
    s = sim.simulate(method, family, n)
    for key in ("aa", "change"):
        a, b, r = s[key]
        defined = ~np.isnan(r.low)
        if _refuses(method, n):
            assert not defined.any()
            continue
        assert defined.all(), (key, np.flatnonzero(~defined)[:5])
        positive = np.all(a > 0, axis=1) & np.all(b > 0, axis=1)
        # (a) all-positive runs: a ratio, never −100% or below (the HL shift only when asked)
        if method != "mannwhitney-shift":
            assert np.all(r.scale[positive] == "ratio")
        assert np.all(r.low[r.scale == "ratio"] > -1), r.low.min()
        if family in sim.POSITIVE and method != "mannwhitney-shift":
            assert positive.mean() > 0.99
        # (b) one rule of agreement, in every experiment
        assert np.array_equal(r.significant, r.p_value <= 0.05)
        # (c) the estimate inside its interval
        assert np.all((r.low <= r.estimate) & (r.estimate <= r.high))
        notes = set(",".join(r.note).split(","))
        assert not notes & {"disagreement", "estimate_outside", "numerical_range"}, notes
        assert np.all((r.p_value >= 0) & (r.p_value <= 1))


def check_false_positive_rate(method, family, n):
    r = sim.error_rates(method, family, n)
    if _refuses(method, n):
        assert r["undefined"] == 1.0 and r["false_positive"] == 0.0
        return
    assert r["undefined"] == 0.0
    exc = _exception(method, family, n)
    bound = exc[1] if exc and exc[0] == "false_positive" else MAX_FALSE_POSITIVE
    assert r["false_positive"] <= bound, r
    if exc and exc[0] == "false_positive":
        assert r["false_positive"] > MAX_FALSE_POSITIVE, "no longer an exception: remove it"
    if n >= 10 and family in sim.FAMILIES and method in sim.METHODS:
        assert r["false_positive"] >= 0.03, r
    # the p-value and the interval make the same decision
    assert r["p_below_alpha"] == r["false_positive"], r


def check_coverage(method, family, n):
    r = sim.error_rates(method, family, n)
    if _refuses(method, n):
        assert r["coverage"] == 0.0 and r["undefined"] == 1.0
        return
    exc = _exception(method, family, n)
    bound = exc[1] if exc and exc[0] == "coverage" else MIN_COVERAGE
    assert r["coverage"] >= bound, r
    if n >= 10 and family in sim.FAMILIES and method in sim.METHODS:
        assert r["coverage"] <= 0.98, r
