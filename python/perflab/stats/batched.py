"""Comparisons made a table at a time: a method whose intervals come in batches (`Intervals`
of E rows from (E, n) blocks) compares many pairs through one batched call per pair of
sample sizes, or the rows of two blocks through one call (`Batched`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from perflab.stats.arrays import FloatArray
from perflab.stats.intervals import Intervals, levels_per_row
from perflab.stats.summary import as_samples
from perflab.stats.types import Comparison


class Batched:
    """`compare_many` and `compare_rows` of a method from its `_batch` (the intervals of
    two (E, n) blocks, a level per row) and its `_comparisons` (a batch's rows as
    Comparisons, with the warnings each calls for)."""

    def compare_many(
        self,
        pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
        confidence: float | Sequence[float] = 0.95,
    ) -> list[Comparison]:
        """`compare` of many (baseline, candidate) pairs, the same results: pairs of equal
        sizes go through one batched call (a table of thousands of cells costs milliseconds
        instead of a call each). ``confidence``: one level, or one per pair (e.g. the
        levels a multiple-comparison correction asks for)."""
        return compare_by_size(pairs, confidence, self._batch, self._comparisons)

    def compare_rows(
        self, baseline: FloatArray, candidate: FloatArray, confidence: float | Sequence[float]
    ) -> list[Comparison]:
        """`compare_many` of the pairs of rows of two blocks: one batched call, no regrouping."""
        return compare_blocks(baseline, candidate, confidence, self._batch, self._comparisons)

    def _batch(self, a: FloatArray, b: FloatArray, levels: FloatArray) -> Intervals:
        raise NotImplementedError

    def _comparisons(
        self, res: Intervals, a: FloatArray, b: FloatArray, levels: list[float]
    ) -> list[Comparison]:
        raise NotImplementedError


def compare_by_size(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    confidence: float | Sequence[float],
    batch: Callable[[FloatArray, FloatArray, FloatArray], Intervals],
    rows: Callable[[Intervals, FloatArray, FloatArray, list[float]], list[Comparison]],
) -> list[Comparison]:
    """Many (baseline, candidate) comparisons through one batched call per pair of sample
    sizes (a table of thousands of cells costs milliseconds instead of a call each), in the
    order given. ``batch(a, b, levels)`` computes a group (the (E, n) blocks of its pairs);
    ``rows(result, a, b, levels)`` makes its rows Comparisons. ``confidence``: one level, or
    one per pair."""
    flat = as_samples([x for pair in pairs for x in pair])
    samples = list(zip(flat[0::2], flat[1::2]))
    levels = levels_per_row(confidence, len(samples))
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (a, b) in enumerate(samples):
        groups.setdefault((a.size, b.size), []).append(i)
    out: list[Comparison | None] = [None] * len(samples)
    for group in groups.values():
        # (np.array of equal-sized rows: np.stack's result at a fifth of its cost)
        a, b = np.array([samples[i][0] for i in group]), np.array([samples[i][1] for i in group])
        made_rows = compare_blocks(a, b, [levels[i] for i in group], batch, rows)
        for i, c in zip(group, made_rows):
            out[i] = c
    return [c for c in out if c is not None]


def compare_blocks(
    baseline: FloatArray,
    candidate: FloatArray,
    confidence: float | Sequence[float],
    batch: Callable[[FloatArray, FloatArray, FloatArray], Intervals],
    rows: Callable[[Intervals, FloatArray, FloatArray, list[float]], list[Comparison]],
) -> list[Comparison]:
    """`compare_by_size` of the pairs of rows of two (E, n_a) and (E, n_b) blocks: one
    batched call."""
    levels = levels_per_row(confidence, baseline.shape[0])
    return rows(batch(baseline, candidate, np.array(levels)), baseline, candidate, levels)
