"""perflab: performance experiments on real systems, with honest statistics.

The Python API (`perflab.api`, docs/python-api.md)::

    import perflab

    lab = perflab.open("perflab.db")     # the store: experiments(), runs(id), compare(id)
    exp = perflab.run("experiment.toml")  # run an experiment; exp.runs(), exp.compare()

Every name loads on first use (PEP 562), so ``import perflab`` — and `perflab --help` —
import nothing heavy: no pandas, numpy, SQLite or ``importlib.metadata``.

The subpackage that executes experiments is `perflab.execution`: ``perflab.run`` is only
the function.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab._version import __version__
    from perflab.api import open, run

__all__ = ["__version__", "open", "run"]

#: Where each name lives.
_HOMES = {"__version__": "perflab._version", "open": "perflab.api", "run": "perflab.api"}


def __getattr__(name: str) -> Any:
    """``__version__``, ``open`` and ``run`` on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'perflab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
