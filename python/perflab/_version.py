"""The installed version of perflab, read on first use (PEP 562): importlib.metadata costs
~25 ms at start-up, which `perflab --help` need not pay.

``from perflab._version import __version__`` (or ``perflab.__version__``, which reads it
from here). It lives in its own module, at the bottom of the layers, because the package's
``__init__.py`` is the public facade at the top (`perflab.open`, `perflab.run`)."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'perflab._version' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("perflab")
    except PackageNotFoundError:  # running from a source tree without an install
        value = "0.0.0+src"
    globals()["__version__"] = value
    return value
