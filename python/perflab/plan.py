"""Expands variants × matrix × repetitions into the ordered list of runs.

``interleaved`` (default) is a randomized complete block design: block b holds one
run of every (cell, variant) in an order drawn from a generator seeded by
(seed, b), so the schedule is reproducible and each block can be analysed paired.
``sequential`` runs cell by cell, variant by variant, repetitions back to back
(the shell-loop order of the MGLRU memcached experiment), which is simpler but confounds
drift with variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflab.spec.matrix import Cell, expand_matrix
from perflab.spec.schema import ExperimentSpec


@dataclass(frozen=True)
class PlannedRun:
    order_index: int  # 0-based position in execution order
    block: int  # 0-based; warm-up blocks come first
    cell: Cell
    variant: str
    repetition: int  # 1-based within (cell, variant), counted separately for warm-ups
    warmup: bool


def make_plan(spec: ExperimentSpec) -> list[PlannedRun]:
    """The runs planned up front: warm-ups plus the fixed count, or an adaptive design's minimum
    (`plan_block` adds the adaptive blocks one at a time)."""
    cells = expand_matrix(spec.matrix)
    variants = [v.name for v in spec.variant]
    repetitions = spec.initial_repetitions
    runs: list[PlannedRun] = []
    if spec.order == "sequential":
        for cell in cells:
            for variant in variants:
                for warm, count in ((True, spec.warmup), (False, repetitions)):
                    for rep in range(1, count + 1):
                        block = (rep - 1) if warm else spec.warmup + rep - 1
                        runs.append(PlannedRun(len(runs), block, cell, variant, rep, warm))
        return runs
    for block in range(spec.warmup + repetitions):
        runs += plan_block(spec, block, len(runs), cells)
    return runs


def plan_block(
    spec: ExperimentSpec, block: int, first_index: int, cells: list[Cell] | None = None
) -> list[PlannedRun]:
    """Block ``block`` (0-based, warm-ups first) of an interleaved plan: one run of every
    (cell, variant) in an order seeded by (seed, block), numbered from ``first_index``."""
    cells = expand_matrix(spec.matrix) if cells is None else cells
    pairs = [(c, v.name) for c in cells for v in spec.variant]
    warm = block < spec.warmup
    rep = block + 1 if warm else block - spec.warmup + 1
    rng = np.random.default_rng([spec.seed, block])
    order = [int(i) for i in rng.permutation(len(pairs))]
    if any(v.kernel or v.cmdline for v in spec.variant):
        # Kernel variants: a variant's runs of a block together (in a random order of
        # variants, its cells shuffled), so a block boots a host at most once per variant.
        rank = {v.name: int(r) for v, r in zip(spec.variant, rng.permutation(len(spec.variant)))}
        order.sort(key=lambda i: rank[pairs[i][1]])
    return [
        PlannedRun(first_index + k, block, pairs[i][0], pairs[i][1], rep, warm)
        for k, i in enumerate(order)
    ]


def boots(spec: ExperimentSpec, plan: list[PlannedRun]) -> dict[str, int]:
    """Host → the most boots the plan can take there: each change of the kernel its runs
    need (the first run's included: the host may run another), or every run on a host
    with ``reset = "each-run"``; a device booted from here boots for its first run too."""
    variants = {v.name: v for v in spec.variant}
    out: dict[str, int] = {}
    current: dict[str, tuple[str | None, str | None]] = {}
    for run in plan:
        v = variants[run.variant]
        host = spec.hosts.get(v.on or "")
        if v.on is None or host is None:
            continue
        need = (v.kernel, v.cmdline)
        first = host.control is not None and v.on not in current
        changed = (v.kernel or v.cmdline) and current.get(v.on) != need
        if host.reset == "each-run" or first or changed:
            out[v.on] = out.get(v.on, 0) + 1
        current[v.on] = need
    return out
