"""The change within devices, combined (`perflab.stats.devices`): the fixed-effects model
against a plain least-squares fit, van Elteren's test against its definition, the
invariance to each device's offset, and the refusals and warnings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from perflab.stats import Devices, device_batch
from perflab.stats.fixed_effects import make_layout
from perflab.stats.van_elteren import exact_null, pairs
from scipy import stats as sps

BOARDS = ["router-1", "router-2", "router-3"]


def _fleet(rng, n_a=9, n_b=7, change=0.03, noise=0.02):
    """Runs on three boards 5% apart, unequally spread between the variants."""
    da = list(rng.choice(BOARDS, n_a))
    db = list(rng.choice(BOARDS, n_b))
    da[:3], db[:3] = BOARDS, BOARDS  # every board runs both
    off = {"router-1": 1.0, "router-2": 1.05, "router-3": 0.95}
    a = 100 * np.array([off[d] for d in da]) * np.exp(noise * rng.standard_normal(n_a))
    b = (
        100
        * (1 + change)
        * np.array([off[d] for d in db])
        * np.exp(noise * rng.standard_normal(n_b))
    )
    return a, b, da, db


def test_fixed_effects_is_the_least_squares_fit_of_device_plus_variant():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b, da, db = _fleet(rng)
        c = Devices("fixed").compare(a, b, 0.9, baseline_devices=da, candidate_devices=db)
        y = np.log(np.concatenate([a, b]))
        x = np.array([[d == k for k in BOARDS] + [i >= a.size] for i, d in enumerate(da + db)])
        x = x.astype(float)
        coef, rss, *_ = np.linalg.lstsq(x, y, rcond=None)
        df = y.size - x.shape[1]
        se = math.sqrt(rss[0] / df * np.linalg.inv(x.T @ x)[-1, -1])
        t = sps.t.ppf(0.95, df)
        assert c.estimate == pytest.approx(math.expm1(coef[-1]), rel=1e-9)
        assert (c.low, c.high) == pytest.approx(
            (math.expm1(coef[-1] - t * se), math.expm1(coef[-1] + t * se)), rel=1e-9
        )
        assert c.p_value == pytest.approx(2 * sps.t.sf(abs(coef[-1]) / se, df), rel=1e-9)
        # the estimate: the boards' own differences, weighted by n_a·n_b/(n_a + n_b)
        la, lb = np.log(a), np.log(b)
        w = diffs = 0.0
        for k in BOARDS:
            xa, xb = la[np.array(da) == k], lb[np.array(db) == k]
            wk = xa.size * xb.size / (xa.size + xb.size)
            w, diffs = w + wk, diffs + wk * (xb.mean() - xa.mean())
        assert c.estimate == pytest.approx(math.expm1(diffs / w), rel=1e-9)
        assert (c.method, c.statistic, c.interval, c.scale) == (
            "devices",
            "geomean",
            "fixed-effects",
            "ratio",
        )


@pytest.mark.parametrize("test", ["fixed", "ranks"])
def test_a_devices_offset_changes_nothing(test):
    """Every run of one board 7% slower, or every value ×1e-300: the same comparison."""
    rng = np.random.default_rng(2)
    a, b, da, db = _fleet(rng, 12, 12)
    m = Devices(test)
    c0 = m.compare(a, b, baseline_devices=da, candidate_devices=db)
    slow = {"router-2": 1.07}
    a1 = a * np.array([slow.get(d, 1.0) for d in da])
    b1 = b * np.array([slow.get(d, 1.0) for d in db])
    for x, y in ((a1, b1), (a * 1e-300, b * 1e-300), (a * 1e300, b * 1e300)):
        c = m.compare(x, y, baseline_devices=da, candidate_devices=db)
        assert (c.estimate, c.low, c.high, c.p_value) == pytest.approx(
            (c0.estimate, c0.low, c0.high, c0.p_value), rel=1e-9, abs=1e-12
        )


def test_on_one_device_the_tests_are_the_pooled_t_test_and_mann_whitney():
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(0, 0.05, 8), rng.lognormal(0.03, 0.05, 9)
    fixed = Devices("fixed").compare(a, b)
    t = sps.ttest_ind(np.log(b), np.log(a), equal_var=True)
    assert fixed.p_value == pytest.approx(t.pvalue, rel=1e-9)
    ranks = Devices("ranks").compare(a, b)
    assert ranks.p_value == pytest.approx(sps.mannwhitneyu(b, a, method="exact").pvalue, rel=1e-9)


def _statistic(a, b, da, db, theta):
    """S(θ) by its definition: Σ over devices of w_d · #{pairs with b/a > e^θ} (ties ½)."""
    s = 0.0
    for k in set(da) & set(db):
        xa = np.log(a[np.array(da) == k])
        xb = np.log(b[np.array(db) == k]) - theta
        d = xb[None, :] - xa[:, None]
        s += ((d > 0).sum() + 0.5 * (d == 0).sum()) / (xa.size + xb.size + 1)
    return s


def test_exact_p_value_is_the_permutation_distribution_within_devices():
    """Tiny layout: every relabelling of runs within devices enumerated."""
    rng = np.random.default_rng(4)
    da, db = ["x", "x", "y", "y", "y"], ["x", "x", "y", "y"]
    a, b = rng.lognormal(0, 0.1, 5), rng.lognormal(0.1, 0.1, 4)
    observed = _statistic(a, b, da, db, 0.0)
    null = []
    groups = {k: np.concatenate([a[np.array(da) == k], b[np.array(db) == k]]) for k in "xy"}
    sizes = {k: (da.count(k), db.count(k)) for k in "xy"}
    splits = {k: list(itertools.combinations(range(sum(sizes[k])), sizes[k][0])) for k in "xy"}
    for sx, sy in itertools.product(splits["x"], splits["y"]):
        xa, xb, ya, yb = [], [], [], []
        for k, chosen, (pa, pb) in (("x", sx, (xa, xb)), ("y", sy, (ya, yb))):
            for i, v in enumerate(groups[k]):
                (pa if i in chosen else pb).append(v)
        null.append(_statistic(np.array(xa + ya), np.array(xb + yb), da, db, 0.0))
    null = np.array(null)
    mu = null.mean()
    p = min(1.0, 2 * min(np.mean(null <= observed + 1e-12), np.mean(null >= observed - 1e-12)))
    c = Devices("ranks").compare(a, b, baseline_devices=da, candidate_devices=db)
    assert c.p_value == pytest.approx(p, rel=1e-9)
    assert mu == pytest.approx(sum(n * m / 2 / (n + m + 1) for n, m in sizes.values()))
    support, cdf = exact_null(((2, 2), (3, 2)))
    assert cdf[-1] == pytest.approx(1.0)
    assert support.size == np.unique(np.round(null, 9)).size


def test_rank_interval_is_the_set_of_shifts_the_test_does_not_reject():
    rng = np.random.default_rng(5)
    a, b, da, db = _fleet(rng, 14, 14, noise=0.05)
    m = Devices("ranks")
    c = m.compare(a, b, 0.9, baseline_devices=da, candidate_devices=db)
    lo, hi = math.log1p(c.low), math.log1p(c.high)
    width = hi - lo
    for theta in np.linspace(lo - width / 2, hi + width / 2, 41):
        if min(abs(theta - lo), abs(theta - hi)) < 1e-9:
            continue
        shifted = m.compare(a, b / math.exp(theta), 0.9, baseline_devices=da, candidate_devices=db)
        assert (shifted.p_value > 0.1) == (lo < theta < hi), theta
    # the estimate: where S crosses its mean
    s = _statistic(a, b, da, db, math.log1p(c.estimate))
    mu = sum(da.count(k) * db.count(k) / 2 / (da.count(k) + db.count(k) + 1) for k in BOARDS)
    assert s == pytest.approx(mu, abs=1 / (min(da.count(k) + db.count(k) for k in BOARDS) + 1))


@pytest.mark.parametrize("test", ["fixed", "ranks"])
def test_significant_agrees_with_p_at_every_level(test):
    rng = np.random.default_rng(6)
    for _ in range(30):
        a, b, da, db = _fleet(rng, 10, 10, change=rng.uniform(-0.05, 0.05), noise=0.04)
        for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
            c = Devices(test).compare(a, b, level, baseline_devices=da, candidate_devices=db)
            assert c.significant == (c.p_value <= 1 - level)
            assert c.low <= c.estimate <= c.high and c.low > -1


def test_runs_that_are_not_all_positive():
    rng = np.random.default_rng(7)
    a, b, da, db = _fleet(rng, 12, 12)
    neg = Devices("fixed").compare(-a, -b, baseline_devices=da, candidate_devices=db)
    assert neg.scale == "relative" and neg.statistic == "mean" and neg.estimate < 0
    z = rng.normal(0, 5, 24)  # straddling zero
    near = Devices("fixed").compare(z[:12], z[12:] + 2, baseline_devices=da, candidate_devices=db)
    assert near.scale == "absolute" and [w.code for w in near.warnings] == ["absolute_change"]
    ranks = Devices("ranks").compare(-a, -b, baseline_devices=da, candidate_devices=db)
    assert ranks.scale == "relative" and ranks.statistic == "hl-shift"


def test_the_choice_follows_the_runs():
    rng = np.random.default_rng(8)
    a, b, da, db = _fleet(rng, 12, 12)
    assert Devices().compare(a, b, baseline_devices=da, candidate_devices=db).choice == "clean"
    a[0] *= 2  # one throttled run
    c = Devices().compare(a, b, baseline_devices=da, candidate_devices=db)
    assert (c.choice, c.interval, c.statistic) == ("outliers", "van-elteren", "hl-ratio")
    few = Devices().compare(a[:3], b[:3], baseline_devices=da[:3], candidate_devices=db[:3])
    assert few.choice == "few_runs" and few.interval == "fixed-effects"


def test_refusals_and_too_few_runs():
    m = Devices()
    with pytest.raises(ValueError, match="no device ran both"):
        m.compare([1.0, 2.0], [1.0, 2.0], baseline_devices=["a", "a"], candidate_devices=["b", "b"])
    with pytest.raises(ValueError, match="both"):
        m.compare([1.0, 2.0], [1.0, 2.0], baseline_devices=["a", "a"])
    with pytest.raises(ValueError, match="one device per run"):
        m.compare([1.0, 2.0], [1.0, 2.0], baseline_devices=["a"], candidate_devices=["a", "a"])
    with pytest.raises(ValueError, match="unknown test"):
        Devices("median")
    c = m.compare([1.0, 2.0], [1.5, 2.5], baseline_devices=["a", "b"], candidate_devices=["a", "c"])
    assert math.isnan(c.low) and not c.significant
    assert [w.code for w in c.warnings] == ["too_few_runs"]


def test_batches_share_a_layout_and_pairs_stay_within_devices():
    layout = make_layout([["x", "y", "x"], ["y", "x"]])
    ia, ib, w = pairs(layout)
    assert sorted(zip(ia.tolist(), ib.tolist())) == [(0, 1), (1, 0), (2, 1)]
    assert w.tolist() == pytest.approx([1 / 4, 1 / 4, 1 / 3])
    rng = np.random.default_rng(9)
    a, b = rng.lognormal(0, 0.1, (5, 3)), rng.lognormal(0, 0.1, (5, 2))
    batch = device_batch(a, b, ["x", "y", "x"], ["y", "x"], 0.9, test="fixed")
    for i in range(5):
        one = Devices("fixed").compare(
            a[i], b[i], 0.9, baseline_devices=["x", "y", "x"], candidate_devices=["y", "x"]
        )
        assert one.estimate == pytest.approx(batch.estimate[i], rel=1e-12)
