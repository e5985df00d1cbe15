"""Expands variants × matrix × repetitions into the ordered list of runs.

``interleaved`` (default) is a randomized complete block design: block b holds one
run of every (cell, variant) in an order drawn from a generator seeded by
(seed, b), so the schedule is reproducible and each block can be analysed paired.
``sequential`` runs cell by cell, variant by variant, repetitions back to back
(the shell-loop order of the MGLRU memcached experiment), which is simpler but confounds
drift with variants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflab.spec.matrix import Cell, expand_matrix
from perflab.spec.schema import ExperimentSpec, VariantSpec


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


@dataclass(frozen=True)
class HostNeed:
    """A host a run of some variant needs checked before its first step, and what it
    must run there: ``kernel`` and ``cmdline`` (None: any), booted afresh before every
    run (``each_run``), or a device this machine boots (``booted_here``: it is booted
    for the first run that needs it, down until then)."""

    host: str
    kernel: str | None
    cmdline: str | None
    each_run: bool
    booted_here: bool


def hosts_needed(
    spec: ExperimentSpec,
    variant: VariantSpec,
    booted_here: Callable[[str], bool] | None = None,
) -> list[HostNeed]:
    """The one rule of which hosts a run of ``variant`` boots or checks, for the dry run's
    count (`boots`) and the runner alike: the variant's host when it names a kernel or
    command line, then every device booted from here and every ``reset = "each-run"``
    host. ``booted_here``: whether a host is a device this machine boots (default: it
    has a ``[hosts.NAME.control]``; the runner also knows the labgrid places it powers)."""
    here = booted_here or (lambda n: spec.hosts[n].control is not None)
    names = []
    if variant.on not in (None, "local") and (variant.kernel or variant.cmdline):
        names.append(variant.on)
    names += [n for n, h in spec.hosts.items() if here(n) or h.reset == "each-run"]
    out = []
    for name in dict.fromkeys(n for n in names if n is not None and n in spec.hosts):
        mine = name == variant.on
        out.append(
            HostNeed(
                name,
                variant.kernel if mine else None,
                variant.cmdline if mine else None,
                spec.hosts[name].reset == "each-run",
                here(name),
            )
        )
    return out


def boots(spec: ExperimentSpec, plan: list[PlannedRun]) -> dict[str, int]:
    """Host → the most boots the plan can take there (`hosts_needed` for each run): each
    change of the kernel its runs need (the first run's included: the host may run
    another), every run on a host with ``reset = "each-run"``, and a device booted from
    here for the first run that needs it."""
    variants = {v.name: v for v in spec.variant}
    out: dict[str, int] = {}
    current: dict[str, tuple[str | None, str | None]] = {}
    for run in plan:
        for need in hosts_needed(spec, variants[run.variant]):
            wants = (need.kernel, need.cmdline)
            first = need.booted_here and need.host not in current
            changed = (need.kernel or need.cmdline) and current.get(need.host) != wants
            if need.each_run or first or changed:
                out[need.host] = out.get(need.host, 0) + 1
            current[need.host] = wants
    return out
