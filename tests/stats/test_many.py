"""The table-at-once forms give exactly what one call per cell gives: `Welch.compare_many`
and `summarize_many` (used by compare for speed) against `compare` and `summarize`, on
samples of mixed sizes (1 to 30 runs), signs and magnitudes."""

from __future__ import annotations

import numpy as np
from perflab.stats import Welch
from perflab.stats.summary import summarize, summarize_many


def _samples(rng: np.random.Generator, count: int, scales=None) -> list[np.ndarray]:
    out = []
    for i in range(count):
        n = int(rng.choice([1, 2, 3, 5, 10, 30]))
        kind = rng.integers(4)
        scale = 10.0 ** rng.integers(-200, 200) if scales is None else scales[i]
        if kind == 0:
            x = rng.lognormal(0, 0.5, n)
        elif kind == 1:
            x = rng.normal(-3, 1, n)
        elif kind == 2:
            x = rng.integers(0, 4, n).astype(float)
        else:
            x = np.full(n, 2.0)
        out.append(x * scale)
    return out


def test_summarize_many_equals_summarize():
    samples = _samples(np.random.default_rng(5), 600)
    for level in (0.9, 0.95):  # repr: NaN fields (n = 1) compare equal as text
        assert repr(summarize_many(samples, level)) == repr([summarize(s, level) for s in samples])


def test_compare_many_equals_compare():
    rng = np.random.default_rng(6)
    scales = 10.0 ** rng.integers(-200, 200, 400)  # a pair shares its magnitude
    pairs = [
        (a, b * (1.1 if rng.random() < 0.5 else 1))
        for a, b in zip(_samples(rng, 400, scales), _samples(rng, 400, scales))
    ]
    for interval in ("auto", "difference", "fieller"):
        w = Welch(interval)
        assert repr(w.compare_many(pairs, 0.95)) == repr([w.compare(a, b, 0.95) for a, b in pairs])


def test_compare_many_with_a_level_per_pair_and_in_a_correction():
    from perflab.stats.correction import correct

    rng = np.random.default_rng(7)
    pairs = [
        (rng.normal(100, 5, 10), rng.normal(100 + 4 * (i % 3 == 0), 5, 10)) for i in range(300)
    ]
    w = Welch()
    levels = [float(x) for x in rng.uniform(0.8, 0.999, len(pairs))]
    assert repr(w.compare_many(pairs, levels)) == repr(
        [w.compare(a, b, lv) for (a, b), lv in zip(pairs, levels)]
    )
    comps = w.compare_many(pairs, 0.95)
    for correction in ("holm", "bonferroni", "bh"):
        one = correct(
            comps, correction, lambda i, lv: w.compare(*pairs[i], lv), holm_intervals="nominal"
        )
        many = correct(
            comps,
            correction,
            None,
            holm_intervals="nominal",
            recompute_many=lambda js, lvs: w.compare_many([pairs[j] for j in js], lvs),
        )
        assert repr(one.comparisons) == repr(many.comparisons)


def _rebuilt(obj):
    """``obj`` made again by its dataclass's own constructor, from its fields."""
    import dataclasses

    return type(obj)(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})


def test_table_records_are_their_dataclasses_field_for_field():
    """The table-at-once forms make their summaries, locations and comparisons without the
    dataclasses' __init__ (`perflab.stats.records`): each must be the object __init__ makes,
    every field there, nothing else."""
    from perflab.stats import Auto, MannWhitney

    rng = np.random.default_rng(8)
    scales = 10.0 ** rng.integers(-100, 100, 300)
    pairs = list(zip(_samples(rng, 300, scales), _samples(rng, 300, scales)))
    for method in (Welch(), MannWhitney(), Auto()):
        comps = method.compare_many(pairs, 0.95)
        many = getattr(method, "summary_many", None)  # Auto summarizes per chosen method
        summaries = many([a for a, _ in pairs], 0.95) if many else []
        for obj in comps + summaries + [s.location for s in summaries]:
            again = _rebuilt(obj)
            assert repr(again) == repr(obj) and vars(again) == vars(obj)


def test_mannwhitney_many_says_ties_exactly_where_the_runs_tie():
    """Whether a comparison warns of ties is read from how its row was computed (tied rows
    never exactly); checked against the runs themselves, for exact and approximate sizes."""
    from perflab.stats import MannWhitney

    rng = np.random.default_rng(9)
    pairs = []
    for _ in range(300):
        n = int(rng.choice([5, 12, 60]))  # 60 runs: the normal approximation, untied or not
        coarse = rng.random() < 0.5
        draw = (lambda: rng.integers(0, 8, n).astype(float)) if coarse else (lambda: rng.random(n))
        pairs.append((draw() + 1, draw() + 1))
    mw = MannWhitney()
    for (a, b), c in zip(pairs, mw.compare_many(pairs, 0.95)):
        both = np.concatenate([a, b])
        tied = np.unique(both).size < both.size
        assert any(w.code == "ties" for w in c.warnings) == tied
    assert repr(mw.compare_many(pairs, 0.95)) == repr([mw.compare(a, b, 0.95) for a, b in pairs])


def test_medians_are_numpys_bit_for_bit():
    from perflab.stats.arrays import medians

    rng = np.random.default_rng(10)
    for n in (1, 2, 3, 4, 19, 20):
        x = rng.standard_t(2, (500, n)) * 10.0 ** rng.integers(-300, 300, (500, 1))
        x[::7] = np.round(x[::7])  # ties
        assert np.array_equal(medians(x), np.median(x, axis=1))
        assert medians(x[0]) == np.median(x[0])


def _one_size_pairs(rng: np.random.Generator, count: int, n: int) -> list[tuple[np.ndarray, ...]]:
    """Pairs of one size: clean, outlying, skewed, tied and negative runs, any magnitude."""
    out = []
    for _ in range(count):
        scale = 10.0 ** rng.integers(-100, 100)
        kind = rng.integers(5)
        if kind == 0:
            a, b = rng.normal(100, 3, n), rng.normal(103, 3, n)
        elif kind == 1:
            a, b = rng.normal(100, 3, n), rng.normal(100, 3, n)
            a[0] *= 5  # an outlier
        elif kind == 2:
            a, b = rng.lognormal(0, 1.5, n), rng.lognormal(0.3, 1.5, n)
        elif kind == 3:
            a, b = rng.integers(0, 4, n).astype(float), rng.integers(1, 5, n).astype(float)
        else:
            a, b = rng.normal(-2, 1, n), rng.normal(-1.5, 1, n)
        out.append((a * scale, b * scale))
    return out


def test_the_block_forms_equal_the_per_pair_forms():
    """`compare_rows` (the rows of two blocks, one batch) and `choose_blocks` give what
    `compare_many` and `choose_many` give for the same pairs, at one level or one per row."""
    from perflab.stats import Auto, MannWhitney
    from perflab.stats.auto import choose_blocks, choose_many

    rng = np.random.default_rng(10)
    for n in (3, 5, 20):
        pairs = _one_size_pairs(rng, 300, n)
        a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        choices = choose_blocks([a, b])
        assert choices == choose_many([list(p) for p in pairs])
        assert len({c.method for c in choices}) == (2 if n >= 5 else 1)  # both methods used
        levels = [float(x) for x in rng.uniform(0.8, 0.999, len(pairs))]
        for level in (0.95, levels):
            for method in (Welch(), Welch("fieller"), MannWhitney()):
                assert repr(method.compare_rows(a, b, level)) == repr(
                    method.compare_many(pairs, level)
                )
            auto = Auto()
            assert repr(auto.compare_rows(a, b, level, choices)) == repr(
                auto.compare_many(pairs, level, choices)
            )
