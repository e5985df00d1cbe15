"""The experiment file: schema, loading with file:line errors, validation, templating.

Names load on first use (PEP 562): modules that need only a light part of the package
(`perflab.spec.suffixes`, `perflab.spec.template`) do not pay for pydantic and the schema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.load import load_spec, parse_spec

__all__ = ["Spec", "load_spec", "parse_spec"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'perflab.spec' has no attribute {name!r}")
    return getattr(importlib.import_module("perflab.spec.load"), name)
