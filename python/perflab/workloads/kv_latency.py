"""A latency histogram of the load generator, read in milliseconds: one run's, or many
runs' merged (`perflab.workloads.kv_result.merge_histograms`)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram


class LatencyDistribution:
    """A latency histogram (possibly merged from many runs) read in milliseconds.

    Percentiles use the engine's rule (the smallest recorded value with at least
    ⌈q·n⌉ values at or below it, reported as the top of its 0.1% bucket), so a
    single run reads back exactly the percentiles in its metrics.
    """

    def __init__(self, hist: HdrHistogram):
        self._h = hist

    @classmethod
    def decode(cls, blob: str) -> LatencyDistribution:
        return cls(HdrHistogram.decode(blob))

    @property
    def count(self) -> int:
        return int(self._h.get_total_count())

    @property
    def mean_ms(self) -> float:
        return self._h.get_mean_value() / 1e6 if self.count else math.nan

    @property
    def min_ms(self) -> float:
        return self._h.get_min_value() / 1e6 if self.count else math.nan

    @property
    def max_ms(self) -> float:
        return self._h.get_max_value() / 1e6 if self.count else math.nan

    def percentile_ms(self, p: float) -> float:
        """Latency at percentile ``p`` (0–100), ms; NaN when empty."""
        if not 0 <= p <= 100:
            raise ValueError(f"percentile must be within [0, 100], got {p}")
        n = self.count
        if n == 0:
            return math.nan
        target = max(1, math.ceil(p / 100 * n))
        counts = np.ctypeslib.as_array(self._h.counts)[: self._h.counts_len]
        index = int(np.searchsorted(np.cumsum(counts, dtype=np.uint64), target))
        value: int = self._h.get_value_from_index(index)
        value = (
            self._h.get_highest_equivalent_value(value)
            if p > 0
            else self._h.get_lowest_equivalent_value(value)
        )
        return value / 1e6

    def percentiles_ms(self, ps: Iterable[float]) -> dict[float, float]:
        return {p: self.percentile_ms(p) for p in ps}

    def merge(self, other: LatencyDistribution) -> LatencyDistribution:
        """A new distribution holding both (neither input changes)."""
        h = HdrHistogram.decode(self.encode())
        h.add(other._h)
        return LatencyDistribution(h)

    def encode(self) -> str:
        blob = self._h.encode()
        return blob.decode() if isinstance(blob, bytes) else blob
