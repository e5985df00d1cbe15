"""Change points of a series of versions: where the runs shift, by how much, and how surely.

Input: the versions in order (commits, releases, dates), each with every one of its runs.
Output: the changes, each between two adjacent versions, as a `Comparison` of the runs just
after it against the runs just before it (the change, its interval, its p-value) and a
verdict for the metric's better direction: "between v1.4 and v1.5: −7.9% [−9.1, −6.6]".

Method — binary segmentation with a rank scan, a permutation test over runs and a
minimum-effect guard on a local comparison:

1. Search (`changepoint_scan`): in a segment of versions (at first the whole series), the
   split where the runs of the versions before and after it differ most, by a standardised
   rank statistic over windows of ``window`` versions each side, twice that… and the whole
   segment, and the permutation p-value of that maximum ("no change in the segment").
2. Judge: the runs of up to ``window`` versions after the split against those of up to
   ``window`` versions before it (never across another change point), by Mann–Whitney with
   the Hodges–Lehmann ratio (`mannwhitney.py`): a ratio for positive runs, so no change
   falls by 100% or more; the shift over |median| for negative ones; the metric's unit when
   the values straddle zero. The split is a change point when the search's p ≤ α, and the
   verdict (`classify` with ``threshold = min_effect``) is BETTER or WORSE: the whole
   interval lies beyond ±min_effect.
3. A change point splits its segment in two, and each half is searched again; a segment
   whose best split is not a change point is not split further.
4. Prune: once no segment splits, every change point is judged again with windows bounded
   by its final neighbours, and the weakest that no longer passes is dropped, until all pass.

Why this and not E-divisive on one number per version (Apache Otava, MongoDB's signal
processing): a version's mean moves by 10% when one run in ten is throttled ×2, which hides
a 5% step among the versions' means; ranks of all the runs do not care how far a throttled
run lies. The permutation test needs no model of the noise (heavy tails, two modes, ties).

Why a guard on a local window: with every run counted, a drift of 0.05% per version makes
the two halves of 100 versions differ by a highly significant 2.5%, so the search alone
would cut a drifting series into steps. Two adjacent windows of 10 versions differ by only
0.5% under that drift, which the default guard (a 99% interval entirely beyond ±0.5%) does
not report. A drift of d per version adds about window·d to a change: keep min_effect at or
above it. The level is 99% by default, not perflab's usual 95%, because a series offers the
search many places to find a change by chance; with it the simulated false alarms stay far
below 1 per 100 versions and recall of 5–20% steps near 100% (docs/statistics.md,
tests/stats/test_changepoints.py: precision, recall, location error per family of noise).

Assumptions and limits: the runs of a version are exchangeable with those of its neighbours
when nothing changed (as every comparison in perflab assumes of a variant's runs); a noise
that differs from build to build (code layout) beyond min_effect reads as changes. A change
is judged on at most ``window`` versions each side, fewer when another change or an end of
the series is nearer: with one run per version, a 5% step in 5% noise is rarely resolved
(use more runs, or a wider window at the cost of the drift guard). No correction is made
for the number of change points reported: each is judged at ``confidence``.

Agreement: a change point's `Comparison` is one Mann–Whitney comparison, so its estimate,
interval, p-value and ``significant`` agree as everywhere in perflab; a reported change
point has ``p_detection ≤ α`` and ``comparison.p_value ≤ α`` and an interval that excludes
0 and ±min_effect. Deterministic: the same data, options and seed give the same result.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.stats.arrays import FloatArray, Values
from perflab.stats.changepoint_scan import Scan, scan_segment
from perflab.stats.mannwhitney import MannWhitney
from perflab.stats.summary import as_sample
from perflab.stats.types import Comparison, Verdict, classify
from perflab.stats.warnings import StatWarning

#: How the change points were found (``ChangePoints.method``).
METHOD = (
    "binary segmentation by a multi-scale rank scan with a permutation test over runs; "
    "each change judged by Mann–Whitney (Hodges–Lehmann) on the versions around it"
)
#: Verdicts that make a split a change point.
DECLARED = (Verdict.BETTER, Verdict.WORSE)


@dataclass(frozen=True)
class ChangePoint:
    """A change between versions ``index − 1`` and ``index`` of the series.

    index:       the first version at the new level (0 < index < number of versions).
    comparison:  the runs of versions ``after`` (candidate) against those of ``before``
                 (baseline), by Mann–Whitney: ``estimate``/``low``/``high`` are the
                 Hodges–Lehmann ratio − 1 as fractions (``scale == "ratio"``, runs all
                 positive: low > −1), the shift over |baseline median| (``relative``) or in
                 the unit (``absolute``); its p-value and ``significant`` agree with them.
    verdict:     `classify` of the comparison for the metric's better direction with the
                 detector's ``min_effect`` as threshold: BETTER or WORSE for a reported
                 change point, NOT_SIGNIFICANT, WITHIN_NOISE or UNDEFINED for a rejected one.
    p_detection: permutation p-value in (0, 1] of "no change" in the segment of versions
                 ``segment`` in which this split was the best (the search's evidence).
    before:      versions [start, stop) whose runs are the baseline (≤ window versions).
    after:       versions [start, stop) whose runs are the candidate (≤ window versions).
    segment:     versions [start, stop) that the search examined when it found this split.
    """

    index: int
    comparison: Comparison
    verdict: Verdict
    p_detection: float
    before: tuple[int, int]
    after: tuple[int, int]
    segment: tuple[int, int]

    @property
    def estimate(self) -> float:
        """The change (a fraction on the ``ratio``/``relative`` scale, else in the unit)."""
        return self.comparison.estimate

    @property
    def low(self) -> float:
        return self.comparison.low

    @property
    def high(self) -> float:
        return self.comparison.high

    @property
    def p_value(self) -> float:
        """The comparison's two-sided p-value (the test its interval inverts)."""
        return self.comparison.p_value

    @property
    def significant(self) -> bool:
        return self.comparison.significant

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "verdict": self.verdict.value,
            "p_detection": self.p_detection,
            "before": list(self.before),
            "after": list(self.after),
            "segment": list(self.segment),
            "comparison": self.comparison.to_dict(),
        }


@dataclass(frozen=True)
class ChangePoints:
    """The change points of a series (`detect_changes`) and how they were found.

    points:     the reported change points, by index; each has p_detection ≤ 1 − confidence
                and a BETTER or WORSE verdict.
    rejected:   splits whose segment did change (p_detection ≤ 1 − confidence) but whose
                local change did not clear ±min_effect (verdict NOT_SIGNIFICANT,
                WITHIN_NOISE or UNDEFINED): a slow drift, or steps too small to report.
    versions:   number of versions in the series.
    better:     ``"higher"`` or ``"lower"``.
    confidence: level of every interval, in (0, 1); α = 1 − confidence for the search too.
    min_effect: the guard, a fraction ≥ 0 (0.01 = 1%): a change is reported only when its
                whole interval lies beyond ±min_effect (not applied on the ``absolute`` scale).
    window:     at most this many versions on each side of a change are compared.
    permutations, seed: the search's shuffles per segment (at most) and its seed.
    """

    points: tuple[ChangePoint, ...]
    rejected: tuple[ChangePoint, ...]
    versions: int
    better: str
    confidence: float
    min_effect: float
    window: int
    permutations: int
    seed: int
    method: str = METHOD
    warnings: tuple[StatWarning, ...] = field(default=())

    @property
    def indices(self) -> list[int]:
        """The reported change points' indices, ascending."""
        return [p.index for p in self.points]

    def segments(self) -> list[tuple[int, int]]:
        """The runs of versions between change points, as [start, stop) pairs."""
        edges = [0, *self.indices, self.versions]
        return list(itertools.pairwise(edges))

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "versions": self.versions,
            "better": self.better,
            "confidence": self.confidence,
            "min_effect": self.min_effect,
            "window": self.window,
            "permutations": self.permutations,
            "seed": self.seed,
            "points": [p.to_dict() for p in self.points],
            "rejected": [p.to_dict() for p in self.rejected],
            "warnings": [w.to_dict() for w in self.warnings],
        }


@dataclass(frozen=True)
class _Options:
    better: str
    confidence: float
    min_effect: float
    window: int
    permutations: int
    seed: int

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence


def detect_changes(
    versions: Sequence[Values],
    better: str = "higher",
    *,
    confidence: float = 0.99,
    min_effect: float = 0.005,
    window: int = 10,
    permutations: int = 999,
    seed: int = 0,
) -> ChangePoints:
    """The change points of a series of versions (see the module docstring for the method).

    versions:     every version's runs, in series order (oldest first); each ≥ 1 finite
                  value; lengths may differ. Never mutated.
    better:       ``"higher"`` or ``"lower"``: which way is an improvement (the verdicts).
    confidence:   level of the intervals; α = 1 − confidence bounds both p-values.
    min_effect:   report a change only when its whole interval lies beyond ±min_effect
                  (a fraction, ≥ 0; 0.01 = 1%), which also keeps a slow drift of less than
                  min_effect/window per version from being read as a step.
    window:       compare at most this many versions on each side of a change (≥ 1).
    permutations: shuffles of the runs per segment searched, at most; the smallest p-value
                  is 1/(permutations + 1), so at least 1/α − 1 (99 at 99%).
    seed:         the shuffles' seed: the same inputs and seed give the same result.
    """
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must lie in (0, 1), not {confidence!r}")
    if not (min_effect >= 0 and np.isfinite(min_effect)):
        raise ValueError(f"min_effect must be a finite fraction ≥ 0, not {min_effect!r}")
    if window < 1:
        raise ValueError(f"window must be ≥ 1 version, not {window!r}")
    need = math.ceil(round(1 / (1 - confidence), 9)) - 1
    if permutations < need:
        raise ValueError(
            f"permutations must be ≥ {need} at {confidence:.1%}: the smallest p-value is "
            f"1/(permutations + 1), not {permutations!r}"
        )
    runs = [as_sample(v) for v in versions]
    opts = _Options(better, float(confidence), float(min_effect), int(window), permutations, seed)
    found, rejected = _segment(runs, opts)
    points, dropped = _prune(runs, found, opts)
    rejected = sorted(rejected + dropped, key=lambda p: p.index)
    return ChangePoints(
        points=tuple(points),
        rejected=tuple(rejected),
        versions=len(runs),
        better=better,
        confidence=opts.confidence,
        min_effect=opts.min_effect,
        window=opts.window,
        permutations=permutations,
        seed=seed,
        warnings=tuple(_warnings(runs, rejected, opts)),
    )


def _judge(runs: list[FloatArray], scan: Scan, lo: int, hi: int, opts: _Options) -> ChangePoint:
    """The split ``scan.index`` judged on up to ``window`` versions each side within [lo, hi)."""
    i = scan.index
    before = (max(lo, i - opts.window), i)
    after = (i, min(hi, i + opts.window))
    a = np.concatenate(runs[before[0] : before[1]])
    b = np.concatenate(runs[after[0] : after[1]])
    c = MannWhitney().compare(a.tolist(), b.tolist(), opts.confidence)
    return ChangePoint(
        index=i,
        comparison=c,
        verdict=classify(c, opts.better, opts.min_effect),
        p_detection=scan.p_value,
        before=before,
        after=after,
        segment=(scan.start, scan.stop),
    )


def _declared(p: ChangePoint, opts: _Options) -> bool:
    return p.p_detection <= opts.alpha and p.verdict in DECLARED


def _segment(runs: list[FloatArray], opts: _Options) -> tuple[list[Scan], list[ChangePoint]]:
    """Binary segmentation: (the scans that found change points, by index; rejected splits)."""
    found: list[Scan] = []
    rejected: list[ChangePoint] = []
    todo = [(0, len(runs))]
    while todo:
        lo, hi = todo.pop()
        scan = scan_segment(
            runs, lo, hi, window=opts.window, permutations=opts.permutations, seed=opts.seed
        )
        if scan.index < 0 or scan.p_value > opts.alpha:
            continue
        point = _judge(runs, scan, lo, hi, opts)
        if not _declared(point, opts):
            rejected.append(point)
            continue
        found.append(scan)
        todo += [(scan.index, hi), (lo, scan.index)]
    return sorted(found, key=lambda s: s.index), rejected


def _prune(
    runs: list[FloatArray], found: list[Scan], opts: _Options
) -> tuple[list[ChangePoint], list[ChangePoint]]:
    """Judge every change point between its final neighbours; drop the weakest failing one
    (largest p-value) and judge again, until every one passes."""
    dropped: list[ChangePoint] = []
    scans = list(found)
    while True:
        edges = [0, *(s.index for s in scans), len(runs)]
        judged = [_judge(runs, s, edges[k], edges[k + 2], opts) for k, s in enumerate(scans)]
        failing = [k for k, p in enumerate(judged) if not _declared(p, opts)]
        if not failing:
            return judged, dropped
        worst = max(failing, key=lambda k: (judged[k].p_value, -abs(judged[k].estimate)))
        dropped.append(judged[worst])
        del scans[worst]


def _warnings(
    runs: list[FloatArray], rejected: list[ChangePoint], opts: _Options
) -> list[StatWarning]:
    out = []
    if len(runs) < 2:
        out.append(
            StatWarning(
                "too_few_versions",
                f"a series of {len(runs)} version{'' if len(runs) == 1 else 's'} has nothing "
                "to change between: add versions",
                {"versions": len(runs)},
            )
        )
    if rejected:
        out.append(
            StatWarning(
                "gradual_change",
                f"the runs change within the series without a step beyond ±{opts.min_effect:.1%} "
                f"between adjacent windows of {opts.window} versions (a slow drift, or steps "
                "smaller than that): look at the trend, or lower min_effect to see them",
                {"splits": tuple(p.index for p in rejected)},
            )
        )
    return out
