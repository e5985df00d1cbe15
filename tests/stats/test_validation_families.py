"""Error rates and invariants of every method on the families added for never-impossible
verdicts (heavy right skew, one run in ten throttled, negative values, integer counts with
ties, values straddling zero, magnitudes 1e-300 and 1e300), by simulation; what is
asserted and its tolerances are in validate.py."""

from __future__ import annotations

import pytest

from tests.stats import sim
from tests.stats.validate import cases, check_coverage, check_false_positive_rate, check_invariants

CASES = cases([f for f in sim.ALL_FAMILIES if f not in sim.FAMILIES])

@pytest.mark.parametrize("method,family,n", CASES)
def test_invariants_in_every_experiment(method, family, n):
    check_invariants(method, family, n)


@pytest.mark.parametrize("method,family,n", CASES)
def test_false_positive_rate(method, family, n):
    check_false_positive_rate(method, family, n)


@pytest.mark.parametrize("method,family,n", CASES)
def test_coverage_of_true_change(method, family, n):
    check_coverage(method, family, n)
