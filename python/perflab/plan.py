"""Expands variants × matrix × repetitions into the ordered list of runs.

``interleaved`` (default) is a randomized complete block design: block b holds one
run of every (cell, variant) in an order drawn from a generator seeded by
(seed, b), so the schedule is reproducible and each block can be analysed paired.
``sequential`` runs cell by cell, variant by variant, repetitions back to back
(the shell-loop order of seed 000), which is simpler but confounds drift with variants.
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
    return [
        PlannedRun(first_index + k, block, pairs[i][0], pairs[i][1], rep, warm)
        for k, i in enumerate(rng.permutation(len(pairs)))
    ]
