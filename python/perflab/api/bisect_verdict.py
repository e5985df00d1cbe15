"""What one bisect step's experiment says about its candidate.

The step's runs are compared as `perflab compare ID --method paired` compares them (its
blocks are interleaved by construction; the bisected metric only): the candidate and
the bad end against the good end,
the baseline; and the candidate against the bad end. With a matrix of several cells, the
geometric mean across the cells decides (the TLDR's sweep row). Then:

- first, which end the candidate is like, block by block (`stats.bisection.nearer_end`:
  the candidate against the mean of the ends in each block, paired, once bad is worse
  than good at 99%): on bad's side → **bad**, on good's → **good**. This is asked after
  every block too (`early_answer`), and the step stops as soon as it answers;
- when the blocks cannot tell (a step that reached its precision target, or ran to its
  most blocks, before they placed the candidate), the comparisons:
  candidate significantly worse than good, in the metric's direction, and not
  significantly better than bad → **bad** (the regression is in it);
- not significantly worse than good, and significantly better than bad → **good** (the
  regression comes after it);
- worse than good and better than bad: where the candidate sits between the ends decides
  — with at least `MOST` of the regression (its change against good over bad's) it is
  **bad**, with at most 1 − `MOST` **good** (the regression is in one commit, and the other
  difference, a sliver of it, is the noise a test at 95% calls significant one time in
  twenty); between those, **undecided**: the change is spread over more than one commit;
- anything else → **undecided**: indistinguishable from both ends (too few runs for the
  noise).

A candidate with no successful run (its build failed) is **skip**ped; good and bad must
run, and bad must be significantly worse than good (otherwise there is nothing to find).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.api.bisect_spec import BAD, CANDIDATE, GOOD

if TYPE_CHECKING:
    from perflab.analysis.comparison_table import ComparisonTable
    from perflab.analysis.dataset import Dataset
    from perflab.execution.adaptive import Decided
    from perflab.stats import Comparison, Verdict
    from perflab.stats.bisection import Position

#: What a step decides about its candidate (the last four end the bisect).
DECISIONS = ("good", "bad", "skip", "undecided", "no_regression", "end_failed")

#: The share of the regression a candidate significantly different from both ends must
#: carry (or lack) to be called bad (good): below it, a spread change; above it, one
#: commit with a difference from the other end too small to matter. (In 5 trials of
#: benchmarks/bisect_trials, one step found a candidate identical to bad "better than
#: bad" by 0.6% of an 8% regression and stopped the bisect as spread.)
MOST = 0.8


@dataclass(frozen=True)
class Change:
    """One variant against another in the bisected metric, as `perflab compare` states it:
    ``comparison`` (None: a side has no successful run) and its verdict ("better",
    "worse", "ns", "undefined"; the metric's direction applied)."""

    comparison: Comparison | None
    verdict: str

    @property
    def estimate(self) -> float | None:
        """The relative change (fraction), None when undefined or not relative."""
        c = self.comparison
        if c is None or not c.relative or math.isnan(c.estimate):
            return None
        return c.estimate

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "verdict": self.verdict,
            "estimate": None if c is None else c.estimate,
            "low": None if c is None else c.low,
            "high": None if c is None else c.high,
            "scale": None if c is None else c.scale,
            "comparison": None if c is None else c.to_dict(),
        }


@dataclass(frozen=True)
class StepEvidence:
    """A step's experiment read back: successful runs per variant, the first failure of a
    variant that has none, the three changes, how the adaptive repetitions ended, and the
    decision with its reason in words."""

    experiment_id: int
    runs: dict[str, int]
    failures: dict[str, str]
    vs_good: Change  # candidate against good
    vs_bad: Change  # candidate against bad
    ends: Change  # bad against good
    blocks: int
    stop_reason: str  # adaptive repetitions: target_reached, max_reached, decided, …
    decision: str  # one of DECISIONS
    why: str
    #: the candidate's place between the ends, block by block (None: < 2 whole blocks)
    position: Position | None = None

    def to_dict(self) -> dict[str, Any]:
        p = self.position
        return {
            "position": None
            if p is None
            else {
                "side": p.side,
                "blocks": p.blocks,
                "share": p.share,
                "vs_ends_mean": dataclasses.asdict(p.position),
                "bad_vs_good_paired": dataclasses.asdict(p.ends),
                "confidence": p.confidence,
            },
            "experiment": self.experiment_id,
            "runs": self.runs,
            "failures": self.failures,
            "vs_good": self.vs_good.to_dict(),
            "vs_bad": self.vs_bad.to_dict(),
            "bad_vs_good": self.ends.to_dict(),
            "blocks": self.blocks,
            "stop_reason": self.stop_reason,
            "decision": self.decision,
            "why": self.why,
        }


def read_step(store: str | None, experiment_id: int, metric: str, better: str) -> StepEvidence:
    """Step ``experiment_id``'s evidence from the store, and its decision."""
    from perflab.analysis.dataset import load_dataset
    from perflab.store import Database

    with Database(store, write=False, create=False) as db:
        data = load_dataset(db, experiment_id)
    runs = {
        v: sum(len(data.sample(cell, v, metric)) for cell, _ in data.cells)
        for v in (GOOD, CANDIDATE, BAD)
    }
    failures: dict[str, str] = {}
    for f in data.failed:
        if not runs.get(f.variant):
            failures.setdefault(f.variant, f.reason or f.status)
    adaptive = data.experiment.settings.get("adaptive") or {}
    blocks, stop = int(adaptive.get("blocks", 0)), str(adaptive.get("reason", ""))
    if any(runs[v] < 2 for v in (GOOD, CANDIDATE, BAD)):
        empty = Change(None, "undefined")
        decision, why = _unmeasured(runs, failures)
        return StepEvidence(
            experiment_id, runs, failures, empty, empty, empty, blocks, stop, decision, why
        )
    from_good = _compare(data, metric)
    vs_good, ends = _change(from_good, CANDIDATE, metric), _change(from_good, BAD, metric)
    vs_bad = _change(_compare(_rebased(data, BAD, CANDIDATE), metric), CANDIDATE, metric)
    position = position_of(data, metric, better)
    decision, why = decide(vs_good, vs_bad, ends, position)
    return StepEvidence(
        experiment_id, runs, failures, vs_good, vs_bad, ends, blocks, stop, decision, why, position
    )


def position_of(data: Dataset, metric: str, better: str) -> Position | None:
    """The candidate's place between the ends from the step's whole blocks (one value per
    variant per block: the mean of its runs there; with several cells, the geometric mean
    over the cells), or None with fewer than 2 whole blocks or values that are not all
    positive."""
    from perflab.stats.bisection import nearer_end
    from perflab.stats.paired import block_means

    per_block: dict[Hashable, list[list[float]]] = {}
    for cell, _ in data.cells:
        means = [
            block_means(data.sample(cell, v, metric), data.blocks.get((cell, v, metric), []))
            for v in (GOOD, CANDIDATE, BAD)
        ]
        for block in set(means[0]) & set(means[1]) & set(means[2]):
            per_block.setdefault(block, [[], [], []])
            for i in range(3):
                per_block[block][i].append(means[i][block])
    # a block's three values stay together; the order of the blocks does not matter
    whole = [v for v in per_block.values() if len(v[0]) == len(data.cells)]
    if len(whole) < 2 or any(x <= 0 for blk in whole for side in blk for x in side):
        return None
    g, c, b = (
        np.exp([math.fsum(map(math.log, blk[i])) / len(blk[i]) for blk in whole]) for i in range(3)
    )
    return nearer_end(g, c, b, higher_is_better=better == "higher")


def early_answer(metric: str, better: str) -> Decided:
    """A bisect step's `perflab.execution.adaptive.Decided`: ends the step's repetitions as soon
    as its blocks tell which end the candidate is like."""

    def answer(data: Dataset) -> str | None:
        p = position_of(data, metric, better)
        if p is None or p.side is None:
            return None
        return f"decided after {p.blocks} blocks: the candidate is {_position_words(p)}"

    return answer


def _position_words(p: Position) -> str:
    """E.g. "on bad's side of the ends' mean: -6.9% [-9.8%, -4.0%], block by block"."""
    pos = p.position
    return (
        f"on {p.side}'s side of the ends' mean: {pos.estimate:+.1%} "
        f"[{pos.low:+.1%}, {pos.high:+.1%}], block by block"
    )


def pair_change(
    store: str | None, experiment_id: int, baseline: str, candidate: str, metric: str
) -> Change:
    """``candidate`` against ``baseline`` in a stored step (e.g. bad against candidate)."""
    from perflab.analysis.dataset import load_dataset
    from perflab.store import Database

    with Database(store, write=False, create=False) as db:
        data = load_dataset(db, experiment_id)
    if data.baseline != baseline:
        data = _rebased(data, baseline, candidate)
    return _change(_compare(data, metric), candidate, metric)


def decide(
    vs_good: Change, vs_bad: Change, ends: Change, position: Position | None = None
) -> tuple[str, str]:
    """The decision from the candidate's place between the ends when its blocks tell it,
    else from the three changes; and why in words."""
    if position is not None and position.side is not None:
        return position.side, _position_words(position)
    if ends.verdict != "worse":
        said = {"ns": "not significantly different from", "better": "better than"}
        return "no_regression", (
            f"bad is {said.get(ends.verdict, ends.verdict + ' against')} good in this step: "
            "no regression to find, or one smaller than these runs can tell from the noise"
        )
    worse_than_good = vs_good.verdict == "worse"
    better_than_bad = vs_bad.verdict == "better"
    if worse_than_good and not better_than_bad:
        return "bad", "worse than good, not better than bad"
    if better_than_bad and not worse_than_good:
        return "good", "not worse than good, better than bad"
    if worse_than_good:
        return _between(vs_good, ends)
    return "undecided", "indistinguishable from both good and bad: the runs are too noisy"


def _between(vs_good: Change, ends: Change) -> tuple[str, str]:
    """Worse than good and better than bad: the decision from the share of the regression
    the candidate carries (`MOST`)."""
    share = None
    if vs_good.estimate is not None and ends.estimate:
        share = vs_good.estimate / ends.estimate
    if share is not None and share >= MOST:
        return "bad", (
            f"worse than good and better than bad, with {share:.0%} of the regression: "
            "it is in this commit"
        )
    if share is not None and share <= 1 - MOST:
        return "good", (
            f"worse than good and better than bad, with {max(share, 0.0):.0%} of the "
            "regression: it comes after this commit"
        )
    said = f" ({share:.0%} of it here)" if share is not None else ""
    return "undecided", (
        f"worse than good but better than bad{said}: the change looks spread over more "
        "than one commit (bisect each part: --bad or --good at this commit)"
    )


def _unmeasured(runs: dict[str, int], failures: dict[str, str]) -> tuple[str, str]:
    """The decision when a variant has fewer than two successful runs."""
    for end in (GOOD, BAD):
        if runs[end] < 2:
            said = failures.get(end, f"{runs[end]} successful run(s)")
            return "end_failed", f"the {end} end did not run: {said}"
    said = failures.get(CANDIDATE, f"{runs[CANDIDATE]} successful run(s)")
    return "skip", f"cannot be measured: {said}"


def _compare(data: Dataset, metric: str) -> ComparisonTable:
    """The step's comparisons, paired by block (``perflab compare ID --method paired``): a
    step's runs are interleaved blocks by construction, and its decision is paired too."""
    from perflab.analysis.against_baseline import compare_dataset

    return compare_dataset(data, metrics=(metric,), method="paired")


def _rebased(data: Dataset, baseline: str, candidate: str) -> Dataset:
    """``data`` with ``baseline`` as its baseline and ``candidate`` the only other variant."""
    experiment = dataclasses.replace(data.experiment, baseline=baseline)
    return dataclasses.replace(data, experiment=experiment, variants=[baseline, candidate])


def _change(result: ComparisonTable, variant: str, metric: str) -> Change:
    """``variant``'s row for ``metric``: its one cell, or across cells the geometric mean."""
    cells = [c for c in result.comparisons if c.variant == variant and c.metric.name == metric]
    if len(cells) == 1:
        return Change(cells[0].comparison, _word(cells[0].verdict))
    for row in result.sweeps:
        if row.variant == variant and row.metric.name == metric:
            return Change(row.comparison, _word(row.verdict))
    return Change(None, "undefined")


def _word(verdict: Verdict) -> str:
    return str(verdict.value)
