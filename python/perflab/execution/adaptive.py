"""Adaptive repetitions in the runner: after each block, ask `stats.decide` whether every
tracked interval is as narrow as the spec's ``target_ci``; if not, plan one more block.
A caller may also end them as soon as the runs answer its own question (`Decided`: a
bisect step stops once its candidate is clearly like one end of the range).

The decision and its history are stored with the experiment (settings["adaptive"]) so that
a resumed experiment continues the same rule and reports can say when and why it stopped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflab.durations import format_duration
from perflab.plan import PlannedRun, plan_block
from perflab.spec import Spec
from perflab.spec.matrix import expand_matrix
from perflab.store import Database

if TYPE_CHECKING:
    from perflab.analysis.dataset import Dataset
    from perflab.stats.adaptive import Decision

#: (baseline runs, candidate runs) per tracked "cell · variant · metric" label.
Samples = dict[Hashable, tuple[list[float], list[float]]]
#: Asked after each block from the spec's ``min`` on, with the runs so far: a sentence
#: saying what the runs decided ends the repetitions there (reason ``decided``); None
#: goes on by the precision rule.
Decided = Callable[["Dataset"], str | None]
#: The reason stored when `Decided` ended the repetitions.
DECIDED = "decided"


@dataclass(frozen=True)
class AdaptiveStep:
    runs: int  # runs added (0: stop)
    message: str  # one line for the progress output
    projected_total: int  # runs the experiment is expected to need in all (for the ETA)


def tracked_samples(data: Dataset, metrics: list[str]) -> Samples:
    """What `stats.decide` looks at: per cell × candidate × metric the (baseline, candidate)
    runs — the interval the TLDR will print. Keys whose baseline mean is zero (no relative
    precision exists) or that have no baseline run yet are left out."""
    samples: Samples = {}
    candidates = [v for v in data.variants if v != data.baseline]
    for cell_key, _ in data.cells:
        where = "" if cell_key == "-" else f"{cell_key} · "
        for metric in metrics:
            base = data.sample(cell_key, data.baseline, metric)
            if not base or math.fsum(base) == 0:
                continue
            for variant in candidates:
                samples[f"{where}{variant} · {metric}"] = (
                    base,
                    data.sample(cell_key, variant, metric),
                )
    return samples


def next_block(
    store: Database, eid: int, spec: Spec, decided: Decided | None = None, width: int = 1
) -> AdaptiveStep:
    """Decide after a completed block; plan the next one when the target is not reached
    (and ``decided`` did not answer) — ``width`` of them, up to the maximum, for a pool of
    that many devices: one more block each, in the time of one."""
    from perflab.analysis.dataset import load_dataset
    from perflab.execution.experiment import planned_rows

    m = spec.model
    a = m.adaptive
    assert a is not None
    runs = store.runs(eid)
    measured = [r for r in runs if not r.warmup]
    blocks = len({r.block for r in measured})
    data = load_dataset(store, eid)
    metrics = list(a.metrics) or [x.name for x in m.metric]
    samples = tracked_samples(data, metrics)
    record = dict(store.experiment(eid).settings.get("adaptive") or {})
    history = list(record.get("decisions", []))
    seconds = [r.ended_at - r.started_at for r in measured if r.started_at and r.ended_at]
    per_block = math.fsum(seconds) / blocks if blocks else 0.0
    pairs = len(expand_matrix(m.matrix)) * len(m.variant)
    verdict = _verdict(spec, samples, metrics, blocks, history)
    if not verdict.stop and decided is not None and blocks >= a.min:
        answer = decided(data)
        if answer:
            verdict = _Verdict(verdict.decision, True, DECIDED, answer, blocks)
            history[-1]["reason"] = DECIDED
    record.update(
        {
            "min": a.min,
            "max": a.max,
            "target": a.target_ci,
            "metrics": metrics,
            "blocks": blocks,
            "reason": verdict.reason,
            "seconds_per_block": per_block,
            "decisions": history,
            "precisions": [p.to_dict() for p in verdict.decision.precisions]
            if verdict.decision
            else [],
        }
    )
    if verdict.stop:
        return _stop(store, eid, spec, record, verdict, blocks, per_block, len(runs))
    new: list[PlannedRun] = []
    first, index = max(r.block for r in runs) + 1, max(r.order_index for r in runs) + 1
    adding = max(1, min(width, a.max - blocks))
    for k in range(adding):
        new += plan_block(m, first + k, index + len(new))
    record["summary"] = f"adaptive repetitions: {verdict.text}"
    store.append_runs(eid, planned_rows(new))
    store.update_settings(eid, adaptive=record)
    projected_total = len(runs) + max(adding, verdict.projected - blocks) * pairs
    which = f"block {blocks + 1}" if adding == 1 else f"blocks {blocks + 1}–{blocks + adding}"
    return AdaptiveStep(
        len(new), f"block {blocks}: {verdict.text}; adding {which}", projected_total
    )


@dataclass(frozen=True)
class _Verdict:
    decision: Decision | None  # stats.decide's; None when nothing can be tracked
    stop: bool
    reason: str
    text: str  # what happened, in blocks
    projected: int  # blocks the experiment is expected to need


def _verdict(
    spec: Spec,
    samples: Samples,
    metrics: list[str],
    blocks: int,
    history: list[dict[str, Any]],
) -> _Verdict:
    """Whether to stop after ``blocks`` blocks, and why; a decision is added to ``history``."""
    from perflab.stats import decide

    m = spec.model
    a = m.adaptive
    assert a is not None
    if not samples:
        text = (
            f"no run of {', '.join(metrics)} succeeded in both variants after {blocks} blocks, "
            "so precision cannot be judged; stopping"
        )
        return _Verdict(None, True, "nothing_to_track", text, blocks)
    decision = decide(samples, a.target_ci, a.min, a.max, m.confidence)
    stop = decision.stop or blocks >= a.max
    reason = decision.reason if decision.stop or blocks < a.max else "max_reached"
    projected = max(blocks, min(a.max, decision.projected_runs))
    widest = max(
        (p.half_width for p in decision.precisions if not math.isnan(p.half_width)),
        default=math.nan,
    )
    history.append(
        {
            "blocks": blocks,
            "widest_half_width": widest,
            "projected_blocks": projected,
            "reason": reason,
        }
    )
    # One run per variant per block: the rule's "runs" are this design's blocks.
    text = decision.message.replace(" runs needed", " blocks needed").replace(" runs", " blocks")
    if blocks >= a.max and not decision.stop:
        text = f"maximum of {a.max} blocks reached; " + decision.message.split("; ", 1)[0]
    return _Verdict(decision, stop, reason, text, projected)


def _stop(
    store: Database,
    eid: int,
    spec: Spec,
    record: dict[str, Any],
    verdict: _Verdict,
    blocks: int,
    per_block: float,
    runs: int,
) -> AdaptiveStep:
    """Record why the experiment stops adding blocks (and the machine time saved)."""
    a = spec.model.adaptive
    assert a is not None
    saved = a.max - blocks
    record.update({"saved_blocks": saved, "saved_seconds": saved * per_block})
    summary = f"adaptive repetitions: {verdict.text}"
    if saved > 0 and verdict.reason in ("target_reached", DECIDED):
        summary += (
            f"; {saved} blocks fewer than max = {a.max} "
            f"(≈ {format_duration(saved * per_block)} of machine time saved)"
        )
    record["summary"] = summary
    store.update_settings(eid, adaptive=record)
    return AdaptiveStep(0, summary, runs)
