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
    metrics = store.metric_defs(exp.id)
    cells = [(c["key"], c["labels"]) for c in settings.get("cells", [])]
    variants = [v["name"] for v in settings.get("variants", [])]
    samples: dict[tuple[str, str, str], list[float]] = {}
    blocks: dict[tuple[str, str, str], list[int]] = {}
    # One pass over the measured values, in execution order (hot for 100k-run experiments).
    for cell_key, variant, block, name, value in store.measured_values(exp.id):
        key = (cell_key, variant, name)
        s = samples.get(key)
        if s is None:
            s = samples[key] = []
            blocks[key] = []
        s.append(value)
        blocks[key].append(block)
    counts = store.status_counts(exp.id)
    failed = [FailedRun(r.order_index, r.cell_key, r.variant, r.repetition, r.status, r.reason)
              for r in store.runs(exp.id, ["failed", "timeout"])]
    seen_cells = {k for k, _ in cells}
    for cell_key, labels, variant in store.cells_and_variants(exp.id):
        if cell_key not in seen_cells:  # imports/stores without a cell list in settings
            cells.append((cell_key, labels))
            seen_cells.add(cell_key)
        if variant not in variants:
            variants.append(variant)
    return Dataset(exp, metrics, list(settings.get("params", [])), cells, variants, samples, blocks,
                   counts, failed)
