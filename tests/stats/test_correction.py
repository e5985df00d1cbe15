"""Multiple comparisons: Holm (default), Bonferroni, Benjamini–Hochberg, none."""

from __future__ import annotations

import numpy as np
import pytest
from perflab.stats import Welch, adjust_p_values, compare_family, correct
from perflab.stats.correction import interval_levels
from scipy import stats as sps


def test_holm_adjusted_p_values_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → max-accumulated 0.06
    assert adjust_p_values(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_p_values(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert adjust_p_values(p, "none") == pytest.approx(p)


def test_bh_matches_scipy_and_nans_are_outside_the_family():
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 15)
    assert adjust_p_values(p, "bh") == pytest.approx(sps.false_discovery_control(p, method="bh"))
    adj = adjust_p_values([0.01, np.nan, 0.02], "bonferroni")
    assert adj[0] == pytest.approx(0.02) and np.isnan(adj[1])


def test_holm_levels_follow_the_steps():
    lv = interval_levels([0.001, 0.2, 0.011, 0.03], "holm", 0.95)
    # step 1: 0.001 ≤ .05/4 → rejected at 98.75%; step 2: 0.011 ≤ .05/3 → 98.33%;
    # step 3: 0.03 > .05/2 → stop; the rest at 1 − .05/2 = 97.5%
    assert lv == pytest.approx([1 - 0.05 / 4, 0.975, 1 - 0.05 / 3, 0.975])
    lv = interval_levels([0.001, 0.2, 0.011, 0.02], "holm", 0.95)
    # now step 3 rejects (0.02 ≤ .025) and step 4 stops: the last one at 1 − .05/1
    assert lv == pytest.approx([1 - 0.05 / 4, 0.95, 1 - 0.05 / 3, 0.975])


def _family(rng, shifts, n=10, sd=2.0):
    return [(rng.normal(100, sd, n), rng.normal(100 + s, sd, n)) for s in shifts]


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh", "none"])
def test_interval_decision_agrees_with_adjusted_p_value(correction):
    rng = np.random.default_rng(2)
    for _ in range(20):
        fam = compare_family(_family(rng, rng.choice([0, 0, 1, 3], 8)), correction=correction)
        for c, lv in zip(fam.comparisons, fam.levels):
            assert c.significant == (c.p_value <= 0.05), (correction, c)
            assert c.confidence == pytest.approx(lv)
        assert fam.size == 8 and len(fam.raw) == 8


def test_holm_with_nominal_intervals_decides_like_holm_and_keeps_the_found_intervals():
    """perflab's default: Holm's decisions; a change found keeps its 95% interval, only the
    demoted ones are widened (to Holm's last step, where they contain zero)."""
    rng = np.random.default_rng(12)
    demoted = 0
    for _ in range(30):
        pairs = _family(rng, rng.choice([0, 0, 1, 1.5, 3], 8))
        welch = Welch()
        stepped = compare_family(pairs, correction="holm")
        nominal = correct(
            stepped.raw,
            "holm",
            lambda i, lv: welch.compare(*pairs[i], lv),
            holm_intervals="nominal",
        )
        for raw, s, n in zip(stepped.raw, stepped.comparisons, nominal.comparisons):
            assert n.significant == s.significant == (s.p_value <= 0.05)
            if n.significant:
                assert (n.low, n.high, n.confidence) == (raw.low, raw.high, 0.95)
            else:
                assert n.low <= 0 <= n.high
                demoted += raw.significant
                if not raw.significant:  # already NS at 95%: not recomputed
                    assert (n.low, n.high, n.confidence) == (raw.low, raw.high, 0.95)
        assert (
            "shown at 95% each" in nominal.statement or "no change was found" in nominal.statement
        )
        k = sum(
            r.significant and not n.significant for r, n in zip(stepped.raw, nominal.comparisons)
        )
        assert (
            (f"{k} change" in nominal.statement and "NS after correction" in nominal.statement)
            if k
            else "NS after correction" not in nominal.statement
        )
    assert demoted > 0  # the family had changes significant alone that Holm does not declare


def test_widened_intervals_contain_the_raw_ones():
    rng = np.random.default_rng(3)
    fam = compare_family(_family(rng, [0, 1, 2, 3, 4, 0]), correction="holm")
    for raw, adj in zip(fam.raw, fam.comparisons):
        assert adj.low <= raw.low and adj.high >= raw.high
        assert adj.p_value >= raw.p_value


def test_family_wise_error_rate_under_the_global_null():
    """2,000 families of 12 A/A comparisons: Holm keeps P(any false change) ≤ 5%; none does not."""
    rng = np.random.default_rng(4)
    e, k, n = 2000, 12, 10
    a = rng.normal(100, 2, (e, k, n))
    b = rng.normal(100, 2, (e, k, n))
    p = sps.ttest_ind(b, a, axis=2, equal_var=False).pvalue  # (e, k)
    any_holm = np.mean([np.any(adjust_p_values(row, "holm") <= 0.05) for row in p])
    any_none = np.mean(np.any(p <= 0.05, axis=1))
    assert any_holm <= 0.06
    assert any_none > 0.4  # 1 − 0.95¹² ≈ 46%


def test_false_discovery_rate_with_some_true_changes():
    """12 comparisons, 4 real changes: BH keeps the share of false changes ≤ 5% on average,
    and its selected intervals cover their truth at ≥ 95% on average (FCR, Benjamini–Yekutieli)."""
    rng = np.random.default_rng(5)
    shifts = np.array([0] * 8 + [2, 3, 4, 5], dtype=float)
    fdp, miss = [], []
    for _ in range(400):
        pairs = _family(rng, shifts)
        fam = compare_family(pairs, correction="bh")
        sig = np.array([c.significant for c in fam.comparisons])
        fdp.append(sig[:8].sum() / max(1, sig.sum()))
        sel = [(c, s) for c, s in zip(fam.comparisons, shifts) if c.significant]
        if sel:
            miss.append(np.mean([not (c.low <= s / 100 <= c.high) for c, s in sel]))
    assert np.mean(fdp) <= 0.05
    assert np.mean(miss) <= 0.05


def test_statements_say_what_was_controlled():
    rng = np.random.default_rng(6)
    pairs = _family(rng, [0, 0, 5, 0])
    assert compare_family(pairs).statement.startswith(
        "Holm over 4 comparisons: the chance of any false change is ≤ 5%"
    )
    assert "false discovery rate" in compare_family(pairs, correction="bh").statement
    assert "No multiple-comparison correction" in compare_family(pairs, correction="none").statement
    assert "simultaneously" in compare_family(pairs, correction="bonferroni").statement


def test_correct_without_recompute_approximates_and_rejects_mixed_levels():
    rng = np.random.default_rng(7)
    pairs = _family(rng, [0, 4, 0])
    raw = [Welch().compare(a, b) for a, b in pairs]
    exact = compare_family(pairs, correction="bonferroni")
    approx = correct(raw, "bonferroni")
    for x, y in zip(exact.comparisons, approx.comparisons):
        assert y.low == pytest.approx(x.low, abs=0.15 * (x.high - x.low))
    mixed = [raw[0], Welch().compare(*pairs[1], 0.9)]
    with pytest.raises(ValueError, match="one confidence"):
        correct(mixed)
    with pytest.raises(ValueError, match="unknown correction"):
        correct(raw, "fdr")


def test_comparisons_carry_raw_and_adjusted_p():
    rng = np.random.default_rng(8)
    fam = compare_family(_family(rng, [0, 3, 0, 1]), correction="holm")
    for raw, c in zip(fam.raw, fam.comparisons):
        assert c.p_raw == raw.p_value and c.correction == "holm" and c.p_value >= c.p_raw
        assert c.to_dict()["p_raw"] == raw.p_value
    assert all(c.correction == "none" and c.p_raw == c.p_value for c in fam.raw)


def test_widening_without_the_data_agrees_with_the_adjusted_p_and_stays_above_minus_100():
    """`correct` without recompute interpolates the near side between the level's interval and
    the level 1 − p at which the test puts it at 0: it excludes 0 exactly when p < 1 − level."""
    from perflab.stats import Comparison
    from perflab.stats.correction import widen
    from scipy import stats as sps

    rng = np.random.default_rng(9)
    for _ in range(500):
        # a log-ratio interval and its test, lopsided by up to 2×, as the methods give them
        lest, se = rng.normal(0, 0.2), rng.uniform(0.01, 0.3)
        df = rng.uniform(3, 60)
        t = sps.t.ppf(0.975, df)
        left, right = se * rng.uniform(0.7, 1.4), se * rng.uniform(0.7, 1.4)
        lo, hi, est = np.expm1(lest - t * left), np.expm1(lest + t * right), np.expm1(lest)
        p = float(2 * sps.t.sf(abs(lest) / (left if lest > 0 else right), df))
        c = Comparison("welch", 0.95, 10, 10, 1.0, 1.0 + est, est, lo, hi, p)
        assert c.significant == (p <= 0.05)
        level = rng.uniform(0.95, 0.9999)
        w = widen(c, level)
        assert w.low <= c.low and w.high >= c.high and w.low > -1
        assert w.low <= w.estimate <= w.high
        assert w.significant == (p < 1 - level), (c, level, w)
