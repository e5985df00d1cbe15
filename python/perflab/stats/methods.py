"""The interface every statistical method implements, and the registry of methods."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from perflab.stats.auto import Auto
from perflab.stats.bootstrap import Bootstrap
from perflab.stats.mannwhitney import MannWhitney
from perflab.stats.paired import Paired
from perflab.stats.summary import Summary
from perflab.stats.types import Comparison
from perflab.stats.welch import Welch


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
_METHODS: dict[str, Callable[..., Method]] = {
    "auto": Auto,
    "welch": Welch,
    "bootstrap": Bootstrap,
    "mannwhitney": MannWhitney,
    "paired": Paired,
}

DEFAULT_METHOD = "auto"


def available_methods() -> list[str]:
    return sorted(_METHODS)


def get_method(name: str = DEFAULT_METHOD, **options: Any) -> Method:
    """A configured method, e.g. ``get_method("bootstrap", statistic="median")``.

    Raises ValueError (one line, naming the valid choices) for an unknown name or option.
    """
    try:
        cls = _METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown statistical method {name!r} (choose from {', '.join(available_methods())})"
        ) from None
    try:
        return cls(**options)
    except TypeError as exc:
        raise ValueError(f"bad option for method {name!r}: {exc}") from None
