"""An experiment's samples, loaded from the store once, grouped by (cell, variant, metric)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perflab.errors import InputError
from perflab.store import Database, ExperimentRow, MetricDef
from perflab.store.grouped import Grouped

#: Suffixes of numeric matrix labels ("1K", "10M", "2G"): powers of ten, as in
#: the lookup-structure experiment's table.
_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([kKMG]?)\s*$")


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
    devices[(cell_key, variant, metric)] — the pool's device of each value (empty: the runs
    were not made on a pool, `perflab.execution.pool`).
    values[cell_key] — {param: value} as the spec gave it (``{"lookups": 1000}`` for the label
    ``1K``); empty for stores older than this field and for imports (see `numeric_values`).
    """

    experiment: ExperimentRow
    metrics: list[MetricDef]
    params: list[str]
    cells: list[tuple[str, dict[str, str]]]
    variants: list[str]
    samples: Mapping[tuple[str, str, str], list[float]] = field(default_factory=dict)
    blocks: Mapping[tuple[str, str, str], list[int]] = field(default_factory=dict)
    status_counts: dict[str, int] = field(default_factory=dict)
    failed: list[FailedRun] = field(default_factory=list)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    system: list[dict[str, Any]] = field(default_factory=list)  # snapshots, oldest first
    devices: Mapping[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def devices_of(self, cell_key: str, metric: str, variants: Sequence[str]) -> int:
        """How many devices the runs of ``variants`` in a cell ran on (0: not a pool's)."""
        if not self.devices:
            return 0
        return len({d for v in variants for d in self.devices.get((cell_key, v, metric), ())})

    @property
    def baseline(self) -> str:
        return self.experiment.baseline

    def sample(self, cell_key: str, variant: str, metric: str) -> list[float]:
        return self.samples.get((cell_key, variant, metric), [])

    def measured(self, key: tuple[str, str, str]) -> bool:
        """Whether sample ``key`` (cell_key, variant, metric) has a run — told by `arrays`,
        without making the sample's list."""
        return len(self.arrays.get(key, ())) > 0

    @functools.cached_property
    def value_block(self) -> tuple[Any, dict[tuple[str, str, str], int]] | None:
        """Every sample as a row of one (G, n) float64 block, and each key's row, when all
        the samples have one size n and every value is finite (most experiments); None
        otherwise. `arrays` are views of its rows, `rows` gathers many at once."""
        import numpy as np

        if isinstance(self.samples, Grouped):
            one = _one_block_of(self.samples)
        else:
            one = None
            if len({len(v) for v in self.samples.values()}) == 1:
                try:
                    block = np.array(list(self.samples.values()), dtype=np.float64)
                except (TypeError, ValueError):  # not numbers: the statistics say so
                    block = None
                if block is not None and block.ndim == 2 and block.shape[1]:
                    one = block, list(self.samples)
        if one is None or not np.isfinite(one[0]).all():
            return None
        block, keys = one
        return block, {k: g for g, k in enumerate(keys)}

    def rows(self, keys: Sequence[tuple[str, str, str]]) -> Any | None:
        """The samples of ``keys`` as the rows of one (E, n) float64 array (a copy), gathered
        in one step; None unless the samples make one block (`value_block`) and each key
        has one."""
        one = self.value_block
        if one is None:
            return None
        block, row = one
        try:
            return block[[row[k] for k in keys]]
        except KeyError:
            return None

    @functools.cached_property
    def arrays(self) -> dict[tuple[str, str, str], Any]:
        """``samples`` as float64 arrays, made once (rows of one 2-D block per sample size):
        the statistics take arrays, and converting 80,000 runs' lists costs each call."""
        import numpy as np

        one = self.value_block
        if one is not None:
            return dict(zip(one[1], one[0]))
        if isinstance(self.samples, Grouped):  # as read: from its buffer, no list per sample
            return _arrays_of(self.samples)
        by_size: dict[int, list[tuple[str, str, str]]] = {}
        for key, values in self.samples.items():
            by_size.setdefault(len(values), []).append(key)
        out: dict[tuple[str, str, str], Any] = {}
        for keys in by_size.values():
            try:
                block = np.array([self.samples[k] for k in keys], dtype=np.float64)
            except (TypeError, ValueError):  # not numbers: the statistics say so, per sample
                out.update((k, self.samples[k]) for k in keys)
                continue
            out.update(zip(keys, block))
        return out

    def numeric_values(self, param: str) -> dict[str, float]:
        """cell_key → the numeric value of matrix parameter ``param`` in that cell.

        From the values stored with the experiment, else from the labels read as numbers
        (``1K`` = 1e3, ``10M`` = 1e7, ``2G`` = 2e9). Raises InputError naming the
        parameter and the first label that is not a number.
        """
        if param not in self.params:
            known = ", ".join(self.params) or "none: the experiment has no matrix"
            raise InputError(f"no matrix parameter '{param}' (parameters: {known})")
        out: dict[str, float] = {}
        for key, labels in self.cells:
            label = labels.get(param, "")
            raw = self.values.get(key, {}).get(param, label)
            x = parse_number(raw)
            if x is None:
                x = parse_number(label)  # e.g. a value stored as text but labelled "1K"
            if x is None:
                raise InputError(
                    f"matrix parameter '{param}' is not numeric: its value '{label}' is not a number "
                    "(numbers may end in K, M or G: 1K, 10M)"
                )
            out[key] = x
        return out


def parse_number(value: Any) -> float | None:
    """A finite number from a matrix value or label: 1000, 1e3, "1000", "1K", "2.5M", "1G";
    None for anything else (booleans, words, NaN)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        m = _NUMBER.match(value)
        if not m:
            return None
        x = float(m.group(1)) * _SUFFIX[m.group(2).upper()]
    else:
        return None
    return x if math.isfinite(x) else None


def _one_block_of(grouped: Grouped) -> tuple[Any, list[tuple[str, str, str]]] | None:
    """(the values as one (G, n) block, the keys of its rows) when every group has n values."""
    import numpy as np

    offsets = np.frombuffer(grouped.offsets, dtype=np.uint64)
    sizes = np.diff(offsets)
    if not len(sizes) or not (sizes == sizes[0]).all():
        return None
    flat = np.frombuffer(grouped.data, dtype=np.float64).copy()  # (the arrays are the caller's)
    return flat.reshape(len(sizes), int(sizes[0])), grouped.keys_in_order


def _arrays_of(grouped: Grouped) -> dict[tuple[str, str, str], Any]:
    """`Dataset.arrays` of values as the store read them: the buffer copied once (the
    arrays are the caller's), each group a row of one 2-D block per size, in the order
    `Dataset.arrays` gives (sizes in order of first appearance, groups in order within)."""
    import numpy as np

    flat = np.frombuffer(grouped.data, dtype=np.float64).copy()
    offsets = np.frombuffer(grouped.offsets, dtype=np.uint64).astype(np.intp)
    sizes = np.diff(offsets)
    keys = grouped.keys_in_order
    if len(sizes) and (sizes == sizes[0]).all():  # one size (most experiments): one block
        return dict(zip(keys, flat.reshape(len(sizes), int(sizes[0]))))
    out: dict[tuple[str, str, str], Any] = {}
    for n in dict.fromkeys(sizes.tolist()):
        rows = np.flatnonzero(sizes == n)
        block = flat[offsets[rows][:, None] + np.arange(n)]
        out.update(zip([keys[g] for g in rows.tolist()], block))
    return out


def load_dataset(store: Database, ref: str | int) -> Dataset:
    exp = store.experiment(ref)
    settings = exp.settings
    metrics = store.metric_defs(exp.id)
    cells = [(c["key"], c["labels"]) for c in settings.get("cells", [])]
    values = {
        c["key"]: dict(c["values"])
        for c in settings.get("cells", [])
        if isinstance(c.get("values"), dict)
    }
    variants = [v["name"] for v in settings.get("variants", [])]
    samples, blocks = store.measured_values(exp.id)
    seen, counts = store.runs_overview(exp.id)
    failed = [
        FailedRun(r.order_index, r.cell_key, r.variant, r.repetition, r.status, r.reason)
        for r in (
            store.runs(exp.id, ["failed", "timeout"])
            if counts.get("failed") or counts.get("timeout")
            else []
        )
    ]
    seen_cells = {k for k, _ in cells}
    for cell_key, labels, variant in seen:
        if cell_key not in seen_cells:  # imports/stores without a cell list in settings
            cells.append((cell_key, labels))
            seen_cells.add(cell_key)
        if variant not in variants:
            variants.append(variant)
    return Dataset(
        exp,
        metrics,
        list(settings.get("params", [])),
        cells,
        variants,
        samples,
        blocks,
        counts,
        failed,
        values,
        _system_snapshots(store, exp.id),
        _devices(store, exp.id, blocks),
    )


def _devices(
    store: Database, eid: int, blocks: Mapping[tuple[str, str, str], list[int]]
) -> dict[tuple[str, str, str], list[str]]:
    """Each value's device (`Dataset.devices`), where the runs name them and line up with
    the values read (their blocks agree); else none."""
    found = store.run_devices(eid)
    out: dict[tuple[str, str, str], list[str]] = {}
    for key, pairs in found.items():
        if [b for b, _ in pairs] != list(blocks.get(key, ())):
            return {}  # (not the runs the values came from: no device is better than a wrong one)
        out[key] = [d for _, d in pairs]
    return out


def _system_snapshots(store: Database, eid: int) -> list[dict[str, Any]]:
    """The system snapshots recorded with the experiment (`analysis.system_conditions`)."""
    from perflab.analysis.system_conditions import parse_snapshots
    from perflab.store.artifact_keys import SNAPSHOT_PREFIX

    names = [n for n, _ in store.artifact_names(eid) if n.startswith(SNAPSHOT_PREFIX)]
    return parse_snapshots([b for n in names if (b := store.artifact(eid, n)) is not None])
