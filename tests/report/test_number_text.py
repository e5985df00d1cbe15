"""The native column formatter (crates/text) against `fmt_number`, Python's own digits:
ties of binary fractions (rounded to even by both), powers of ten and their neighbours
(the decimals come from log10), rounding that carries into a new group (999.95 →
1,000.0), infinities, NaN, signed zeros, subnormals."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from perflab.report.numbers import fmt_number, fmt_numbers


def test_edges_are_pythons_digits():
    xs = [math.inf, -math.inf, math.nan, 0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308]
    for e in range(-12, 16):
        p = 10.0**e
        xs += [p, -p, math.nextafter(p, 0), math.nextafter(p, math.inf), p * 0.99995, p * 9.9995]
    for n in range(1, 40):  # exact binary ties at every decimal place shown
        xs += [k / 2**n for k in range(1, 200, 7)]
        xs += [1000 + k / 2**n for k in range(1, 50, 3)]
    assert fmt_numbers(xs) == [fmt_number(x) for x in xs]


def test_magnitudes_across_the_range():
    rng = random.Random(7)
    xs = [rng.choice([-1, 1]) * 10 ** rng.uniform(-300, 300) for _ in range(20_000)]
    xs += [round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)) for _ in range(20_000)]
    assert fmt_numbers(xs) == [fmt_number(x) for x in xs]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=50))
def test_any_float(xs):
    assert fmt_numbers(xs) == [fmt_number(x) for x in xs]


def test_numbers_of_any_kind_and_none_of_them():
    assert fmt_numbers([]) == []
    assert fmt_numbers([3, 2.5, True]) == ["3.000", "2.500", "1.000"]
