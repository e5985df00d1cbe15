"""Numbers across the whole range: runs of 1e-300 … 1e300, near-zero and zero variances, a
zero or negative baseline — finite, right intervals (the same relative change whatever the
unit) or a one-line reason as a warning, never an exception, and no "inf×" in a sentence.

Reported: values ≥ 1e80 raised an overflow traceback, 1e160 a root-finding ValueError,
1e-80 … 1e-150 a ZeroDivisionError; ≤ 1e-160 gave a zero-width interval; a baseline mean of
0 a silent "n/a"; a warning said "inf× as spread out".
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import perflab.stats as st
import pytest

METHODS = [
    ("auto", {}),
    ("welch", {}),
    ("welch", {"interval": "difference"}),
    ("welch", {"interval": "fieller"}),
    ("bootstrap", {}),
    ("bootstrap", {"statistic": "median"}),
    ("mannwhitney", {}),
    ("mannwhitney", {"scale": "shift"}),
    ("paired", {}),
]
MAGNITUDES = [10.0**e for e in range(-300, 301, 20)] + [1e-160, 1e-150, 1e-80, 1e80, 1e160]

_rng = np.random.default_rng(1)
BASE = 1 + 0.05 * _rng.standard_normal(10)
CAND = 1.1 + 0.05 * _rng.standard_normal(10)


def _all_text(*objs) -> str:
    return " ".join(w.message for o in objs for w in (o if isinstance(o, tuple) else o.warnings))


def _check(c, *texts):
    assert not any(bad in t for t in texts for bad in ("inf×", "inf%", "nan%", "nan×")), texts
    if c.defined:
        assert c.low <= c.estimate <= c.high
        assert c.significant == (c.p_value <= 1 - c.confidence)
        assert c.scale != "ratio" or c.low > -1
        assert math.isfinite(c.low) and math.isfinite(c.high)
    json.dumps(c.to_dict(), allow_nan=True)


@pytest.mark.parametrize("name,options", METHODS)
def test_every_magnitude_gives_the_same_relative_change(name, options):
    method = st.get_method(name, **options)
    ref = method.compare(BASE, CAND)
    assert ref.defined and ref.significant and ref.scale in ("ratio", "relative")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow/underflow/invalid on the way
        for v in MAGNITUDES:
            c = method.compare(BASE * v, CAND * v)
            s = method.summary(BASE * v)
            d = st.diagnose_sample(BASE * v)
            dc = st.diagnose_comparison(BASE * v, CAND * v, c)
            _check(c, _all_text(c, s, d, dc))
            assert (c.scale, c.interval) == (ref.scale, ref.interval), v
            assert (c.estimate, c.low, c.high) == pytest.approx(
                (ref.estimate, ref.low, ref.high), rel=1e-9
            ), v
            assert c.p_value == pytest.approx(ref.p_value, rel=1e-9), v
            assert s.mean == pytest.approx(BASE.mean() * v, rel=1e-12)
            assert s.stddev == pytest.approx(BASE.std(ddof=1) * v, rel=1e-12)
            assert c.baseline_location == pytest.approx(ref.baseline_location * v, rel=1e-12)


@pytest.mark.parametrize("name,options", METHODS)
@pytest.mark.parametrize(
    "case",
    [
        "constant",
        "near-zero variance",
        "zero baseline",
        "all zero",
        "negative",
        "straddling",
        "one side constant",
    ],
)
def test_degenerate_data_give_an_answer_or_a_reason(name, options, case):
    n = 10
    a, b = {
        "constant": (np.ones(n), np.full(n, 1.1)),
        "near-zero variance": (1 + 1e-16 * np.arange(n), 1.1 + 1e-16 * np.arange(n)),
        "zero baseline": (np.zeros(n), np.ones(n) + 0.1 * np.arange(n)),
        "all zero": (np.zeros(n), np.zeros(n)),
        "negative": (-BASE, -CAND),
        "straddling": (BASE - 1, CAND - 1 + 0.2),
        "one side constant": (np.ones(n), CAND),
    }[case]
    method = st.get_method(name, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = method.compare(a, b)
        s = method.summary(a)
        d = st.diagnose_sample(a)
        dc = st.diagnose_comparison(a, b, c)
    _check(c, _all_text(c, s, d, dc))
    if not c.defined:
        assert c.warnings, "an undefined interval says why"
    if case in ("zero baseline", "all zero"):
        assert c.scale == "absolute" and "absolute_change" in [w.code for w in c.warnings]
        assert c.defined
    if case == "negative":  # a fall of a negative metric is a negative change
        assert c.scale == "relative" and c.estimate < 0 and c.high < 0
    if case == "constant" and name == "welch":
        assert c.low == c.high == c.estimate == pytest.approx(0.1)


def test_other_functions_across_the_range():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in MAGNITUDES:
            o = 0.1 * BASE * v
            net = st.subtract_overhead(CAND * v, o)
            assert net.low < net.mean < net.high and math.isfinite(net.low)
            c = st.compare_net(BASE * v, CAND * v, o)
            _check(c, _all_text(c))
            sw = st.sweep_summary([(BASE * v, CAND * v), (CAND * v, BASE * v * 1.2)])
            assert 0 < sw.low < sw.ratio < sw.high and 0 <= sw.p_value <= 1
            assert st.relative_half_width(BASE * v, CAND * v) == pytest.approx(
                st.relative_half_width(BASE, CAND), rel=1e-9
            )
            assert st.detectable_change(BASE * v, CAND * v) == pytest.approx(
                st.detectable_change(BASE, CAND), rel=1e-6
            )
    # near-zero variance: a detectable change of about the noise, no root-finding error
    tiny_noise = 1 + 1e-15 * np.arange(10)
    assert 0 <= st.detectable_change(tiny_noise, tiny_noise) < 1e-12


def test_no_inf_times_in_the_unequal_spread_warning():
    w = st.diagnose_comparison(np.ones(10), CAND)
    (u,) = [x for x in w if x.code == "unequal_variances"]
    assert "inf" not in u.message and "all identical" in u.message and "ratio" not in u.details
