"""Named location statistics of a sample of runs: ``mean``, ``median``, ``pNN`` (a percentile).

Each is a vectorised function over the last axis, so that bootstrap resamples
(E × B × n arrays) are reduced in one call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflab.stats.arrays import FloatArray

_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class Statistic:
    """A location statistic. ``fn(x)`` reduces the last axis of ``x``.

    quantile: the probability in (0, 1) for a percentile (0.5 for the median), None for
    the mean or a custom function; it decides how many runs a bootstrap needs.
    """

    name: str
    fn: Callable[[FloatArray], FloatArray]
    quantile: float | None = None


def _mean(x: FloatArray) -> FloatArray:
    out: FloatArray = np.mean(x, axis=-1)
    return out


def _median(x: FloatArray) -> FloatArray:
    out: FloatArray = np.median(x, axis=-1)
    return out


def _quantile(q: float) -> Callable[[FloatArray], FloatArray]:
    """The linear-interpolated ``q`` quantile (numpy's default) over the last axis."""

    def fn(x: FloatArray) -> FloatArray:
        out: FloatArray = np.quantile(x, q, axis=-1)
        return out

    return fn


def parse_statistic(spec: str | Statistic) -> Statistic:
    """``"mean"``, ``"median"``, or ``"p90"`` / ``"p99.9"`` (linear-interpolated percentile of the runs)."""
    if isinstance(spec, Statistic):
        return spec
    name = str(spec).strip().lower()
    if name == "mean":
        return Statistic("mean", _mean)
    if name in ("median", "p50"):
        return Statistic("median", _median, 0.5)
    m = _PERCENTILE.match(name)
    if m:
        q = float(m.group(1)) / 100
        if 0 < q < 1:
            return Statistic(name, _quantile(q), q)
    raise ValueError(
        f"unknown statistic {spec!r} (use mean, median, or a percentile such as p90 or p99.9)"
    )
