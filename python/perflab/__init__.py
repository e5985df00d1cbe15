"""perflab: performance experiments on real systems, with honest statistics.

The Python API (`perflab.api`, docs/python-api.md)::

    import perflab

    lab = perflab.open("perflab.db")     # the store: experiments(), runs(id), compare(id)
    exp = perflab.run("experiment.toml")  # run an experiment; exp.runs(), exp.compare()

Every name loads on first use (PEP 562), so ``import perflab`` — and `perflab --help` —
import nothing heavy: no pandas, numpy, SQLite or ``importlib.metadata``.

``perflab.run`` is also the name of the subpackage that executes experiments
(`perflab.run.runner`…), which Python's import system sets as this package's attribute
``run`` once it is imported. So that ``perflab.run(spec)`` works whatever was imported
first, that subpackage is made callable (`_CallableRun`): calling it calls
`perflab.api.run`; its modules stay where they are.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import inspect

    from perflab._version import __version__
    from perflab.api import open, run

__all__ = ["__version__", "open", "run"]

#: Where each name lives.
_HOMES = {"__version__": "perflab._version", "open": "perflab.api", "run": "perflab.run"}


class _CallableRun(types.ModuleType):
    """The subpackage `perflab.run`, callable: ``perflab.run(spec, **options)`` is
    `perflab.api.run` (imported on the call)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from perflab.api import run

        return run(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:  # help() and notebooks show the function's
        import inspect  # (here: importing it costs `perflab --help` ~20 ms)

        from perflab.api import run

        return inspect.signature(run)


class _Package(types.ModuleType):
    """This package: when the import system sets its subpackage ``run``, that subpackage
    becomes callable (see the module's docstring)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "run" and type(value) is types.ModuleType:
            value.__class__ = _CallableRun
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """``__version__``, ``open`` and ``run`` on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'perflab' has no attribute {name!r}")
    module = importlib.import_module(_HOMES[name])
    if name == "run":  # the subpackage, made callable as the import set it here
        return globals()["run"]
    value = getattr(module, name)
    globals()[name] = value
    return value
