"""`perflab.stats.special`: scipy.special's own distribution functions, loaded without
scipy's package ``__init__`` (its array-API layer costs more than everything `perflab compare`
computes) — the same ufunc objects, so every value, and every exported digit, is scipy's."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

NAMES = ["stdtr", "stdtrit", "ndtr", "ndtri", "bdtr", "chdtrc", "fdtrc", "nctdtr"]


def _run(code: str) -> list[str]:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_the_functions_are_scipys_own():
    from perflab.stats import special
    from scipy import special as sp

    for name in NAMES:
        assert getattr(special, name) is getattr(sp, name), name


def test_loaded_lean_in_a_fresh_process_and_scipy_still_imports_afterwards():
    code = (
        "import sys, json\n"
        "from perflab.stats import special\n"
        "lean = special.LEAN and 'scipy.special' not in sys.modules "
        "and 'scipy._lib._array_api' not in sys.modules\n"
        "import scipy.special, scipy.stats\n"
        "same = all(getattr(special, n) is getattr(scipy.special, n) for n in special.__all__)\n"
        "t = scipy.stats.ttest_ind([1.0, 2.0, 3.0], [2.0, 3.5, 4.0], equal_var=False)\n"
        "print(json.dumps([lean, same, bool(0 < t.pvalue < 1)]))"
    )
    assert _run(code) == [True, True, True]


def test_the_compare_path_does_not_import_scipys_package():
    code = (
        "import sys, json\n"
        "import perflab.analysis.against_baseline, perflab.analysis.dataset\n"
        "import perflab.report.csv_table, perflab.report.json_doc\n"
        "print(json.dumps(sorted(m for m in ['scipy.special', 'scipy.stats', "
        "'scipy._lib._array_api', 'pandas', 'pydantic', 'matplotlib'] if m in sys.modules)))"
    )
    assert _run(code) == []


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit (NaN where scipy gives NaN)."""
    return a.tobytes() == b.tobytes()


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 7, 19, 38, 100, 1e4, 1e7])
def test_agrees_with_scipy_over_a_grid(df):
    """Bit-for-bit, extreme tails included (they are the same functions; this guards the
    loader against handing out anything else)."""
    from perflab.stats import special
    from scipy import special as sp

    p = np.array([1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 0.001, 0.025, 0.5, 0.975, 0.999, 1 - 1e-12])
    t = np.array([-1e6, -40.0, -5.0, -1.0, 0.0, 0.3, 2.0, 10.0, 1e3])
    assert _same(special.stdtrit(df, p), sp.stdtrit(df, p))
    assert _same(special.stdtr(df, t), sp.stdtr(df, t))
    assert _same(special.ndtri(p), sp.ndtri(p))
    assert _same(special.ndtr(t), sp.ndtr(t))
    assert _same(special.chdtrc(df, np.abs(t)), sp.chdtrc(df, np.abs(t)))
    assert _same(special.nctdtr(df, 1.5, t), sp.nctdtr(df, 1.5, t))
    k = np.arange(0, 41)
    assert _same(special.bdtr(k, 40, 0.5), sp.bdtr(k, 40, 0.5))
