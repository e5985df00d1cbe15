"""The interface every statistical method implements, and the registry of methods."""

from __future__ import annotations

from typing import Protocol, Sequence

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


_METHODS: dict[str, Method] = {m.name: m for m in (Welch(),)}


def available_methods() -> list[str]:
    return sorted(_METHODS)


def get_method(name: str) -> Method:
    try:
        return _METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown statistical method {name!r} (choose from {', '.join(available_methods())})"
        ) from None
