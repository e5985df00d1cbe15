"""The distribution functions the statistics use, as scipy.special's own ufuncs, loaded lean.

``from scipy import special`` costs 0.15–0.3 s before a single value is computed: scipy's
``special/__init__`` loads its array-API dispatch layer (array_api_compat, numpy.ma,
numpy.polynomial, numpy.testing…), which perflab never uses. The functions themselves live
in the compiled module ``scipy.special._ufuncs`` (Boost's Student t, Cephes' normal and
binomial tails), which loads in a few milliseconds on its own. This module loads just that
one, so `perflab compare` pays for what it computes and nothing else.

They are the very same ufunc objects scipy.special exports (``special.stdtrit is
scipy.special.stdtrit`` once both are loaded): every value is bit-for-bit scipy's, so no
output changes by a digit. Another implementation (e.g. Rust's statrs) would agree to ~1e-12
and move the last digits of the CSV and JSON exports.

How: while ``scipy.special._ufuncs`` is imported, the package ``scipy.special`` is stood in
for by an empty package module (its ``__init__`` is what costs); the stand-in is removed
right after, so a later ``import scipy.special`` or ``scipy.stats`` runs scipy's own
``__init__``, which binds the loaded ``_ufuncs`` as its own. If anything
about that fails (another scipy layout), it falls back to ``from scipy import special``.
`tests/stats/test_special.py` checks both paths and the identity of the functions.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["bdtr", "chdtrc", "fdtrc", "nctdtr", "ndtr", "ndtri", "stdtr", "stdtrit"]

#: Whether the functions came from the lean load (False: from ``scipy.special``).
LEAN = False


def _lean() -> Any:
    """``scipy.special._ufuncs`` without running ``scipy/special/__init__``."""
    if "scipy.special" in sys.modules:  # already paid for: use it
        return sys.modules["scipy.special"]
    import scipy  # the top package itself is light; importing it keeps scipy._lib its own

    stand_in = types.ModuleType("scipy.special")
    stand_in.__path__ = [f"{scipy.__path__[0]}/special"]
    sys.modules["scipy.special"] = stand_in
    try:
        return importlib.import_module("scipy.special._ufuncs")
    finally:
        del sys.modules["scipy.special"]


def _load() -> Any:
    global LEAN
    try:
        lean = _lean()
        for name in __all__:
            getattr(lean, name)
    except Exception:  # another scipy layout: the ordinary import, slower, same functions
        from scipy import special

        return special
    LEAN = lean is not sys.modules.get("scipy.special")
    return lean


_module = _load()

stdtr = _module.stdtr  # Student t CDF (Boost)
stdtrit = _module.stdtrit  # Student t quantile (Boost)
ndtr = _module.ndtr  # standard normal CDF
ndtri = _module.ndtri  # standard normal quantile
bdtr = _module.bdtr  # binomial CDF
chdtrc = _module.chdtrc  # chi-square survival function
fdtrc = _module.fdtrc  # F survival function
nctdtr = _module.nctdtr  # non-central t CDF
