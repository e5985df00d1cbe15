"""The matrix of an experiment file expanded into its cells: one `Cell` per combination of
the matrix parameters' values, the first parameter varying slowest."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cell:
    """One point of the matrix: ((param, label, value), ...) in matrix order."""

    params: tuple[tuple[str, str, Any], ...]

    @property
    def key(self) -> str:
        """Stable text key, e.g. ``keys=90%,size=100``; ``-`` for an empty matrix."""
        return ",".join(f"{n}={label}" for n, label, _ in self.params) or "-"

    @property
    def labels(self) -> dict[str, str]:
        return {n: label for n, label, _ in self.params}

    @property
    def values(self) -> dict[str, Any]:
        return {n: v for n, _, v in self.params}


def expand_matrix(matrix: dict[str, Any]) -> list[Cell]:
    """Cartesian product of the matrix parameters, first parameter varying slowest."""
    axes = []
    for name, values in matrix.items():
        if isinstance(values, dict):
            axes.append([(name, str(label), v) for label, v in values.items()])
        else:
            axes.append([(name, _label(v), v) for v in values])
    return [Cell(tuple(combo)) for combo in itertools.product(*axes)]


def _label(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
