"""The public surface: every method has the same interface, frozen results, dicts for JSON."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import perflab.stats as st
import pytest


@pytest.mark.parametrize("name", st.available_methods())
def test_every_method_compares_and_summarises_without_touching_its_inputs(name):
    rng = np.random.default_rng(1)
    a = rng.normal(100, 3, 12)
    b = list(rng.normal(105, 3, 12))
    a0, b0 = a.copy(), list(b)
    m = st.get_method(name)
    c = m.compare(a, b, 0.9)
    s = m.summary(a, 0.9)
    assert np.array_equal(a, a0) and b == b0
    # auto: the chosen method's own result, with the reason it was chosen.
    chosen = (c.method, c.choice) if name == "auto" else (name, "")
    assert (
        chosen[0] in ("welch", "mannwhitney") and chosen[1] in st.auto.REASONS
    ) or name != "auto"
    assert isinstance(c, st.Comparison) and (c.method, c.choice) == chosen and c.confidence == 0.9
    assert c.low <= c.estimate <= c.high and 0 <= c.p_value <= 1 and c.significant
    assert (
        isinstance(s, st.Summary)
        and s.n == 12
        and s.location.low < s.location.value < s.location.high
    )
    json.dumps(c.to_dict()), json.dumps(s.to_dict())
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.low = 0.0  # type: ignore[misc]
    assert isinstance(m.description, str) and m.description


def test_registry_names_and_default():
    assert st.available_methods() == ["auto", "bootstrap", "mannwhitney", "paired", "welch"]
    assert st.DEFAULT_METHOD == "auto" and st.get_method().name == "auto"
    assert st.DEFAULT_CORRECTION == "holm" and set(st.CORRECTIONS) == {
        "holm",
        "bonferroni",
        "bh",
        "none",
    }


def test_other_results_serialise():
    rng = np.random.default_rng(2)
    a, b, o = rng.normal(10, 1, 10), rng.normal(11, 1, 10), rng.normal(2, 0.1, 10)
    sizes = np.repeat([1e2, 1e3, 1e4, 1e5], 5)
    fit = st.fit_scaling(
        sizes, (0.001 + 1e-6 * sizes) * (1 + 0.02 * rng.standard_normal(sizes.size))
    )
    objs = [
        st.compare_family([(a, b), (a, o + 8)]),
        st.diagnose_sample(a),
        st.sweep_summary([(a, b), (b, a)]),
        st.decide({"k": (a, b)}, 0.01, 5, 50),
        st.subtract_overhead(a, o),
        fit,
        st.compare_scaling(fit, fit),
    ]
    for obj in objs:
        json.dumps(obj.to_dict())
