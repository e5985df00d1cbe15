"""The interface every statistical method implements, and the registry of methods."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from perflab.stats.summary import Summary
    from perflab.stats.types import Comparison


class Method(Protocol):
    name: str
    description: str

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary: ...

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison: ...


#: name → class; options are the class's keyword arguments:
#:   auto() (Welch or Mann–Whitney per comparison, from the runs: `auto.py`),
#:   welch(interval="auto"|"difference"|"fieller"), bootstrap(statistic="mean"|"median"|"pNN",
#:   resamples=10000, seed=0), mannwhitney(scale="auto"|"ratio"|"shift"), paired().
#: Each as (module, class), imported when asked for (the bootstrap is not imported to run
#: the default).
_METHODS: dict[str, tuple[str, str]] = {
    "auto": ("perflab.stats.auto", "Auto"),
    "welch": ("perflab.stats.welch", "Welch"),
    "bootstrap": ("perflab.stats.bootstrap", "Bootstrap"),
    "mannwhitney": ("perflab.stats.mannwhitney", "MannWhitney"),
    "paired": ("perflab.stats.paired", "Paired"),
}

DEFAULT_METHOD = "auto"


def available_methods() -> list[str]:
    return sorted(_METHODS)


def get_method(name: str = DEFAULT_METHOD, **options: Any) -> Method:
    """A configured method, e.g. ``get_method("bootstrap", statistic="median")``.

    Raises ValueError (one line, naming the valid choices) for an unknown name or option.
    """
    try:
        module, class_name = _METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown statistical method {name!r} (choose from {', '.join(available_methods())})"
        ) from None
    cls = getattr(importlib.import_module(module), class_name)
    try:
        method: Method = cls(**options)
        return method
    except TypeError as exc:
        raise ValueError(f"bad option for method {name!r}: {exc}") from None
