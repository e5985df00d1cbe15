"""The default method: Welch where the runs look clean, Mann–Whitney where they do not.

Welch's test of the means is the most powerful one for clean, near-normal noise, but a
single throttled run (a noisy neighbour, a thermal event) or a heavy right tail (latencies)
inflates the variance until it sees nothing: one run in ten at half speed and a true +3%
change at 10 runs per variant, Welch finds it 11% of the time, Mann–Whitney 62%. Ranks
barely notice such runs. So the automatic choice looks at the runs of a comparison — the
runs of every variant in one cell, each centred on its own median (a change of location
between the variants does not count) — and takes Mann–Whitney (the Hodges–Lehmann ratio
or shift, `mannwhitney.py`) when it sees either of:

- an outlying run: a residual more than 3.5 robust standard deviations (1.4826 × MAD of
  the pooled residuals, with the small-sample factor n/(n − 0.8)) from their median;
- skew: |mean − median| / sd of the pooled residuals above 2.5 × 0.755/√N, 2.5 times the
  sampling noise of that ratio under normal runs (N pooled runs).

Otherwise, or when a variant has fewer than 4 runs (a rank test of 3 runs against 3 can
never reach p ≤ 0.05), Welch. Simulated over seven families of runs × n ∈ {5, 10, 30}
(`benchmarks/verdicts_vs_benchstat`, docs/evidence.md): the A/A false-positive rate stays
≤ 5% within simulation noise in every family, and the power is at least Mann–Whitney's
(benchstat's test) and at least Welch's, within simulation noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from perflab.stats.arrays import BoolArray, FloatArray, medians
from perflab.stats.intervals import Intervals, as_batch, check_levels, levels_per_row
from perflab.stats.mannwhitney import MannWhitney, mannwhitney_batch
from perflab.stats.summary import Summary, as_samples
from perflab.stats.types import Comparison
from perflab.stats.welch import Welch, welch_batch

OUTLIER_Z = 3.5
SKEW_K = 2.5
#: Sampling sd of (mean − median)/sd for normal samples, times √N (√(π/2 − 1)).
_SKEW_SD = 0.7555
MIN_RANK_RUNS = 4

#: Why the choice fell where it did: code → a few words for the TLDR header.
REASONS = {
    "clean": "no outlying runs, little skew",
    "outliers": "outlying runs",
    "skew": "skewed runs",
    "few_runs": "too few runs for a rank test",
}


@dataclass(frozen=True)
class Choice:
    """method: ``welch`` or ``mannwhitney``; reason: a key of `REASONS`."""

    method: str
    reason: str

    @property
    def why(self) -> str:
        return REASONS[self.reason]


# The four choices there are, made once (a table's thousands of cells share them).
_OUTLIERS = Choice("mannwhitney", "outliers")
_SKEW = Choice("mannwhitney", "skew")
_CLEAN = Choice("welch", "clean")
_FEW_RUNS = Choice("welch", "few_runs")


def _flags(residuals: FloatArray) -> tuple[BoolArray, BoolArray]:
    """(outlying, skewed) per row of an (E, N) array of median-centred residuals."""
    n = residuals.shape[1]
    med = medians(residuals)[:, None]
    dev = np.abs(residuals - med)
    scale = 1.4826 * n / (n - 0.8) * medians(dev)[:, None]
    # More than half the residuals tie (integer counts): the mean absolute deviation instead.
    scale = np.where(scale > 0, scale, 1.2533 * np.mean(dev, axis=1, keepdims=True))
    sd = residuals.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        outlying = np.any(dev > OUTLIER_Z * scale, axis=1) & (scale[:, 0] > 0)
        skew = np.abs(residuals.mean(axis=1) - med[:, 0]) / sd
        skewed = (sd > 0) & (skew > SKEW_K * _SKEW_SD / np.sqrt(n))
    return outlying, skewed


def choose_many(groups: Sequence[Sequence[Sequence[float]]]) -> list[Choice]:
    """The method for each group of samples (the variants of one cell and metric).

    Groups with the same sample sizes are decided in one vectorized pass."""
    out: list[Choice | None] = [None] * len(groups)
    by_sizes: dict[tuple[int, ...], list[int]] = {}
    kept = [[s for s in g if len(s)] for g in groups]
    flat = iter(as_samples([s for g in kept for s in g]))
    arrays = [[next(flat) for _ in g] for g in kept]
    for i, g in enumerate(arrays):
        sizes = tuple(x.size for x in g)
        if not sizes or min(sizes) < MIN_RANK_RUNS:
            out[i] = _FEW_RUNS
        else:
            by_sizes.setdefault(sizes, []).append(i)
    for sizes, rows in by_sizes.items():
        chosen = choose_blocks([np.array([arrays[i][j] for i in rows]) for j in range(len(sizes))])
        for i, choice in zip(rows, chosen):
            out[i] = choice
    return [c for c in out if c is not None]


def choose_blocks(blocks: Sequence[FloatArray]) -> list[Choice]:
    """`choose_many` of groups given as one (U, n_v) block of finite values per variant (row
    u of each: group u's sample of that variant), decided in one vectorized pass."""
    if not blocks:
        return []
    if min(b.shape[1] for b in blocks) < MIN_RANK_RUNS:
        return [_FEW_RUNS] * blocks[0].shape[0]
    outlying, skewed = _flags_of_batch(blocks)
    return [
        _OUTLIERS if out_r else _SKEW if skew_r else _CLEAN
        for out_r, skew_r in zip(outlying.tolist(), skewed.tolist())
    ]


def _flags_of_batch(groups: Sequence[FloatArray]) -> tuple[BoolArray, BoolArray]:
    """(outlying, skewed) per row of E groups given as (E, n_v) arrays, one per variant."""
    return residual_flags(np.concatenate([x - medians(x)[:, None] for x in groups], axis=1))


def residual_flags(residuals: FloatArray) -> tuple[BoolArray, BoolArray]:
    """(outlying, skewed) per row of (E, N) residuals: runs less the location of their own
    group (a variant; a device and a variant), as the choice judges them."""
    # Rescale each row to unit spread first: runs of 1e-300 or 1e300 decide alike.
    span = np.max(np.abs(residuals), axis=1, keepdims=True)
    return _flags(residuals / np.where(span > 0, span, 1.0))


def choose_batch(baseline: FloatArray, candidate: FloatArray) -> BoolArray:
    """Boolean (E,): rows of (E, n) batches for which ``auto`` takes Mann–Whitney."""
    a, b = as_batch(baseline, "baseline"), as_batch(candidate, "candidate")
    if min(a.shape[1], b.shape[1]) < MIN_RANK_RUNS:
        return np.zeros(a.shape[0], bool)
    outlying, skewed = _flags_of_batch([a, b])
    rank: BoolArray = outlying | skewed
    return rank


def auto_batch(
    baseline: FloatArray, candidate: FloatArray, confidence: float | FloatArray = 0.95
) -> Intervals:
    """The batched form (E comparisons, as `welch_batch`): each row by the method
    `choose_batch` picks for it; ``kind`` names the interval, as the chosen method's."""
    a, b = as_batch(baseline, "baseline"), as_batch(candidate, "candidate")
    levels = check_levels(confidence, a.shape[0])
    rank = choose_batch(a, b)
    out = welch_batch(a, b, levels)
    if not rank.any():
        return out
    mw = mannwhitney_batch(a[rank], b[rank], levels[rank])
    fields = {}
    for f in dataclasses.fields(Intervals):
        col = np.array(getattr(out, f.name), copy=True)
        col[rank] = getattr(mw, f.name)
        fields[f.name] = col
    return Intervals(**fields)


def choose(*samples: Sequence[float]) -> Choice:
    return choose_many([samples])[0]


class Auto:
    """Welch or Mann–Whitney per comparison, chosen from the runs (see the module's docstring).

    Each result is the chosen method's own (``Comparison.method`` names it) with
    ``choice`` set to the reason."""

    name = "auto"
    description = "Welch for clean runs, Mann–Whitney where runs are outlying or skewed"

    def __init__(self) -> None:
        self.methods: dict[str, Welch | MannWhitney] = {
            "welch": Welch(),
            "mannwhitney": MannWhitney(),
        }

    def method_for(self, choice: Choice) -> Welch | MannWhitney:
        return self.methods[choice.method]

    def summary(self, sample: Sequence[float], confidence: float = 0.95) -> Summary:
        return self.method_for(choose(sample)).summary(sample, confidence)

    def compare(
        self, baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
    ) -> Comparison:
        return self.compare_many([(baseline, candidate)], confidence)[0]

    def compare_rows(
        self,
        baseline: FloatArray,
        candidate: FloatArray,
        confidence: float | Sequence[float],
        choices: Sequence[Choice],
    ) -> list[Comparison]:
        """`compare_many` of the pairs of rows of two (E, n) blocks of finite values, each
        by the method of its ``choices``: one batch per method, no regrouping."""
        levels = np.array(levels_per_row(confidence, baseline.shape[0]))
        return self._by_method(
            choices,
            lambda impl, rows: impl.compare_rows(
                baseline[rows], candidate[rows], levels[rows].tolist()
            ),
        )

    def compare_many(
        self,
        pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
        confidence: float | Sequence[float] = 0.95,
        choices: Sequence[Choice] | None = None,
    ) -> list[Comparison]:
        """`compare` of many pairs; ``choices`` (one per pair) when the caller decided them
        over more than the pair (all variants of a cell), else decided per pair."""
        levels = levels_per_row(confidence, len(pairs))
        if choices is None:
            choices = choose_many([list(p) for p in pairs])
        return self._by_method(
            choices,
            lambda impl, rows: impl.compare_many(
                [pairs[i] for i in rows], [levels[i] for i in rows]
            ),
        )

    def _by_method(
        self,
        choices: Sequence[Choice],
        compare: Callable[[Welch | MannWhitney, list[int]], list[Comparison]],
    ) -> list[Comparison]:
        """Each comparison by the method of its choice — ``compare(method, rows)`` compares
        the rows given —, with the choice's reason."""
        out: list[Comparison | None] = [None] * len(choices)
        for name, impl in self.methods.items():
            rows = [i for i, c in enumerate(choices) if c.method == name]
            if rows:
                for i, c in zip(rows, compare(impl, rows)):
                    # (each made here, seen by no one yet: its field set in place, not copied)
                    c.__dict__["choice"] = choices[i].reason
                    out[i] = c
        return [c for c in out if c is not None]
