"""An experiment's samples, loaded from the store once, grouped by (cell, variant, metric)."""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.store import ExperimentRow, MetricDef, Store


@dataclass(frozen=True)
class FailedRun:
    order_index: int
    cell_key: str
    variant: str
    repetition: int
    status: str
    reason: str | None


@dataclass(frozen=True)
class Dataset:
    """Measured values of successful, non-warm-up runs, in execution order.

    samples[(cell_key, variant, metric)] — list of floats in the metric's unit.
    blocks[(cell_key, variant, metric)]  — the block of each value (for paired analysis).
    """

    experiment: ExperimentRow
    metrics: list[MetricDef]
    params: list[str]
    cells: list[tuple[str, dict[str, str]]]
    variants: list[str]
    samples: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)
    blocks: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    status_counts: dict[str, int] = field(default_factory=dict)
    failed: list[FailedRun] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.experiment.baseline

    def sample(self, cell_key: str, variant: str, metric: str) -> list[float]:
        return self.samples.get((cell_key, variant, metric), [])


def load_dataset(store: Store, ref: str | int) -> Dataset:
    exp = store.experiment(ref)
    settings = exp.settings
    runs = store.runs(exp.id)
    by_run: dict[int, dict[str, float]] = {}
    for run_id, name, value in store.metrics(exp.id):
        by_run.setdefault(run_id, {})[name] = value
    metrics = store.metric_defs(exp.id)
    cells = [(c["key"], c["labels"]) for c in settings.get("cells", [])]
    variants = [v["name"] for v in settings.get("variants", [])]
    seen_cells = {k for k, _ in cells}
    samples: dict[tuple[str, str, str], list[float]] = {}
    blocks: dict[tuple[str, str, str], list[int]] = {}
    counts: dict[str, int] = {}
    failed: list[FailedRun] = []
    for r in runs:
        counts[r.status] = counts.get(r.status, 0) + 1
        if r.cell_key not in seen_cells:  # older stores / imports without a cell list
            cells.append((r.cell_key, r.cell))
            seen_cells.add(r.cell_key)
        if r.variant not in variants:
            variants.append(r.variant)
        if r.status in ("failed", "timeout"):
            failed.append(FailedRun(r.order_index, r.cell_key, r.variant, r.repetition, r.status, r.reason))
        if r.status != "ok" or r.warmup:
            continue
        for name, value in by_run.get(r.id, {}).items():
            key = (r.cell_key, r.variant, name)
            samples.setdefault(key, []).append(value)
            blocks.setdefault(key, []).append(r.block)
    return Dataset(exp, metrics, list(settings.get("params", [])), cells, variants, samples, blocks,
                   counts, failed)
