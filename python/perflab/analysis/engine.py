"""The configured statistical method applied per cell and metric of a dataset (pure): the
automatic choice made once per (cell, metric) over the runs of all its variants, so that
the summaries and every comparison of that cell use the same method; the summaries and the
comparisons batched (one block's rows gathered at once where the samples make one)."""

from __future__ import annotations

from typing import Any, TypeAlias

from perflab.analysis.dataset import Dataset
from perflab.errors import InputError
from perflab.stats import Comparison, Summary, get_method
from perflab.stats.auto import Auto, Choice, choose_blocks, choose_many
from perflab.stats.devices import Devices
from perflab.stats.methods import Method
from perflab.stats.paired import Paired
from perflab.store import MetricDef

#: The methods a pool's runs are compared within devices by, and the test of
#: `perflab.stats.devices` each becomes (``paired`` pairs blocks, each on one device
#: already; the bootstrap resamples runs as they are).
DEVICE_TESTS = {"auto": "auto", "welch": "fixed", "mannwhitney": "ranks"}

#: A comparison to make: (cell_key, labels, variant, metric, its result once made).
PendingRow: TypeAlias = tuple[str, dict[str, str], str, MetricDef, Comparison | None]


class Engine:
    """The configured method, applied per (cell, metric): ``auto`` chooses Welch or
    Mann–Whitney once per cell and metric, over the runs of all its variants, so that the
    summaries and every comparison of that cell use the same method."""

    def __init__(self, data: Dataset, method: str, options: dict[str, Any] | None) -> None:
        try:
            self.impl = get_method(method, **(options or {}))
        except ValueError as e:
            raise InputError(str(e)) from None
        self.data = data
        self.method = method
        self.choices: dict[tuple[str, str], Choice] = {}
        if isinstance(self.impl, Auto):
            units = [(k, m.name) for k, _ in data.cells for m in data.metrics]
            rows = [data.rows([(k, v, m) for k, m in units]) for v in data.variants]
            blocks = [b for b in rows if b is not None]
            if len(blocks) == len(rows):  # (one block: the rows gathered, not regrouped)
                chosen = choose_blocks(blocks)
            else:
                arrays = data.arrays
                chosen = choose_many(
                    [[arrays.get((k, v, m), ()) for v in data.variants] for k, m in units]
                )
            self.choices = dict(zip(units, chosen))

    def _for(self, cell_key: str, metric: str) -> Method:
        if isinstance(self.impl, Auto):
            return self.impl.method_for(self.choices[(cell_key, metric)])
        return self.impl

    def summaries(
        self, keys: list[tuple[str, str, str]], confidence: float
    ) -> dict[tuple[str, str, str], Summary]:
        """(cell, variant, metric) → Summary, batched per method where the method can."""
        groups: dict[str, list[tuple[str, str, str]]] = {}
        impls: dict[str, Method] = {}
        if isinstance(self.impl, Auto):  # by the method chosen for each (cell, metric)
            impls.update(self.impl.methods)
            for key in keys:
                groups.setdefault(self.choices[key[0], key[2]].method, []).append(key)
        else:
            groups[self.method], impls[self.method] = list(keys), self.impl
        out: dict[tuple[str, str, str], Summary] = {}
        for name, group in groups.items():
            impl, samples = impls[name], self.data.rows(group)
            if samples is None:
                samples = [self.data.arrays[key] for key in group]
            if hasattr(impl, "summary_many"):
                summarized = impl.summary_many(samples, confidence)
            else:
                summarized = [impl.summary(x, confidence) for x in samples]
            out.update(zip(group, summarized))
        return out

    def compare(self, rows: list[PendingRow], levels: list[float]) -> list[Comparison]:
        """The comparisons of ``rows`` (cell, labels, variant, metric, _), each at its level:
        all at once where the method can (one vectorized call per sample size); a row whose
        runs a pool's devices made (two or more), within each device (`_devices`)."""
        test = DEVICE_TESTS.get(self.method)
        pooled = (
            []
            if test is None
            else [
                i
                for i, (k, _, v, m, _) in enumerate(rows)
                if self.data.devices_of(k, m.name, [self.data.baseline, v]) >= 2
            ]
        )
        if not pooled:
            return self._compare(rows, levels)
        rest = [i for i in range(len(rows)) if i not in set(pooled)]
        out: list[Comparison | None] = [None] * len(rows)
        made = self._compare([rows[i] for i in rest], [levels[i] for i in rest]) if rest else []
        for i, c in zip(rest, made):
            out[i] = c
        assert test is not None
        for i in pooled:
            out[i] = self._devices(Devices(test), rows[i], levels[i])
        return [c for c in out if c is not None]

    def _devices(self, impl: Devices, row: PendingRow, level: float) -> Comparison:
        """One comparison within each device of a pool, combined (`perflab.stats.devices`)."""
        data = self.data
        k, _, v, m, _ = row
        base, cand = (k, data.baseline, m.name), (k, v, m.name)
        try:
            return impl.compare(
                data.arrays[base],
                data.arrays[cand],
                level,
                baseline_devices=data.devices[base],
                candidate_devices=data.devices[cand],
            )
        except ValueError as e:
            raise InputError(f"{self.method} at {k} · {v} · {m.name}: {e}") from None

    def _compare(self, rows: list[PendingRow], levels: list[float]) -> list[Comparison]:
        data = self.data
        if isinstance(self.impl, Paired):  # method "paired"
            impl = self.impl
            return [
                self._paired(impl, k, v, m.name, lv) for (k, _, v, m, _), lv in zip(rows, levels)
            ]
        arrays, baseline = data.arrays, data.baseline
        method: Any = self.impl  # (its batched forms, where it has them: `hasattr`)
        auto = isinstance(method, Auto)
        choices = [self.choices[(k, m.name)] for k, _, _, m, _ in rows] if auto else []
        a = data.rows([(k, baseline, m.name) for k, _, _, m, _ in rows])
        b = data.rows([(k, v, m.name) for k, _, v, m, _ in rows])
        by_rows = a is not None and b is not None and hasattr(method, "compare_rows")
        pairs = (
            []
            if by_rows
            else [(arrays[k, baseline, m.name], arrays[k, v, m.name]) for k, _, v, m, _ in rows]
        )
        try:
            made: list[Comparison]
            if by_rows:  # (one block: the rows gathered, not regrouped by size)
                made = method.compare_rows(a, b, levels, *([choices] if auto else []))
                return made
            if auto or hasattr(method, "compare_many"):
                made = method.compare_many(pairs, levels, *([choices] if auto else []))
                return made
        except ValueError as e:
            raise InputError(f"{self.method}: {e}") from None
        return [self._one(row, pair, lv) for row, pair, lv in zip(rows, pairs, levels)]

    def _one(
        self, row: PendingRow, pair: tuple[list[float], list[float]], level: float
    ) -> Comparison:
        try:
            return self.impl.compare(*pair, level)
        except ValueError as e:
            raise InputError(f"{self.method} at {row[0]} · {row[2]} · {row[3].name}: {e}") from None

    def _paired(
        self, impl: Paired, cell_key: str, variant: str, metric: str, level: float
    ) -> Comparison:
        data = self.data
        try:
            return impl.compare(
                data.sample(cell_key, data.baseline, metric),
                data.sample(cell_key, variant, metric),
                level,
                baseline_blocks=data.blocks[(cell_key, data.baseline, metric)],
                candidate_blocks=data.blocks[(cell_key, variant, metric)],
            )
        except ValueError as e:
            raise InputError(f"{self.method} at {cell_key} · {variant} · {metric}: {e}") from None
