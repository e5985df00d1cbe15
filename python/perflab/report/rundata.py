"""What a report shows besides the comparison: per-run values in execution order,
latency spectra from stored histograms, environments, outputs, failures, matrix values.

The use-case layer reads them from the store (`perflab.api.run_reader`) and builds
`RunData` with the functions here. No statistics here: spectra are percentiles read off
merged HDR histograms, the data's own description.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from perflab.analysis.dataset import Dataset
from perflab.errors import InputError
from perflab.report.environment import VOLATILE_KEYS, environment_rows
from perflab.report.monitor_runs import MonitorRuns
from perflab.workloads.kv_latency import LatencyDistribution

#: Most lines / characters of a run's output kept in a report (the tail is kept).
OUTPUT_LINES = 40
OUTPUT_CHARS = 4000

#: Highest "nines" of a latency spectrum (99.9999%), and its resolution.
MAX_NINES = 6.0
NINES_STEP = 0.05


@dataclass(frozen=True)
class RunPoint:
    """One stored run mapped into the compared dataset.

    position:  x of plots: 1-based execution order (for two experiments, B's runs follow A's).
    run:       the run's own number in its experiment (``perflab show EXP --run N``).
    values:    metric → value in the metric's unit (only metrics of the comparison).
    """

    position: int
    run: int
    experiment_id: int
    cell_key: str
    variant: str
    warmup: bool
    values: dict[str, float]
    host: str | None
    started_at: float | None


@dataclass(frozen=True)
class FailedRunInfo:
    run: int
    experiment_id: int
    cell_key: str
    variant: str
    repetition: int
    status: str
    reason: str


@dataclass(frozen=True)
class Spectrum:
    """Latency by percentile of one kv phase, cell and variant (all requests, sets + gets).

    nines:   x values, -log10(1 - p/100): 1 = 90%, 2 = 99%, 3 = 99.9%.
    merged:  latency (ms) at each of ``nines`` of all measured runs' histograms merged.
    per_run: the same for each run alone (each as long as its own request count allows).
    """

    phase: str
    cell_key: str
    variant: str
    runs: int
    requests: int
    nines: tuple[float, ...]
    merged: tuple[float, ...]
    per_run: tuple[tuple[float, ...], ...]

    @property
    def percentiles(self) -> tuple[float, ...]:
        return tuple(nines_to_percentile(x) for x in self.nines)


@dataclass(frozen=True)
class EnvColumn:
    """One host's environment as shown: ``label`` names the column (host, side, variants)."""

    label: str
    host: str
    experiment_id: int
    variants: tuple[str, ...]
    info: dict[str, Any]
    rows: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class EnvTable:
    """Environments side by side; ``differs[i]`` is True when row i is not the same in
    every column (time of capture, free memory and load are not counted as differences)."""

    columns: tuple[EnvColumn, ...]
    labels: tuple[str, ...]
    differs: tuple[bool, ...]

    def value(self, col: int, row: int) -> str:
        return self.columns[col].rows[row][1]


@dataclass(frozen=True)
class RunOutput:
    """The tail of one step's output of one run (stdout or stderr)."""

    variant: str
    run: int
    experiment_id: int
    cell_key: str
    name: str  # artifact name, e.g. "stdout:load"
    text: str
    truncated: bool


@dataclass(frozen=True)
class LoadProcessRow:
    """One load process of a kv phase spread over hosts (``PHASE@HOST#N``), over the
    measured runs of a cell × variant: medians of its own throughput and p99, and of its
    share of the merged throughput."""

    phase: str
    cell: str
    variant: str
    process: str  # "client1#1"
    runs: int
    ops_per_sec: float
    p99_latency_ms: float
    share: float  # of the phase's merged ops/s, 0..1


@dataclass(frozen=True)
class RunData:
    runs: list[RunPoint] = field(default_factory=list)
    failed: list[FailedRunInfo] = field(default_factory=list)
    spectra: list[Spectrum] = field(default_factory=list)
    environment: EnvTable | None = None
    outputs: list[RunOutput] = field(default_factory=list)
    #: param → {label: numeric value} for matrix parameters whose every value is a number.
    numeric_params: dict[str, dict[str, float]] = field(default_factory=dict)
    #: x where each origin's runs begin (two experiments: B's first position), with its label.
    sides: list[tuple[int, str]] = field(default_factory=list)
    load_processes: list[LoadProcessRow] = field(default_factory=list)
    monitors: list[MonitorRuns] = field(default_factory=list)  # /proc series (monitor_runs.py)


def nines_to_percentile(nines: float) -> float:
    """2 → 99.0 (rounded so that whole nines give exact percentiles: 99, not 98.99999999999999)."""
    fraction: float = 10.0 ** (-nines)
    return round(100.0 * (1.0 - fraction), 10)


def load_process_rows(
    processes: dict[tuple[str, str, str, str], list[tuple[float, float, float]]],
) -> list[LoadProcessRow]:
    """Medians per process over its runs (the data's own description, not a statistic
    compared)."""
    rows = []
    for (phase, cell, variant, process), per_run in processes.items():
        ops, p99, share = (statistics.median(col) for col in zip(*per_run, strict=True))
        rows.append(LoadProcessRow(phase, cell, variant, process, len(per_run), ops, p99, share))
    return rows


def _grid(count: int) -> list[float]:
    """Nines from 0 up to what ``count`` requests can resolve (1000 requests: 99.9%)."""
    top = min(MAX_NINES, math.log10(count)) if count > 1 else 0.0
    steps = math.floor(top / NINES_STEP + 1e-9)
    return [round(i * NINES_STEP, 6) for i in range(steps + 1)]


def spectrum(phase: str, cell: str, variant: str, dists: list[LatencyDistribution]) -> Spectrum:
    merged = dists[0]
    for d in dists[1:]:
        merged = merged.merge(d)
    grid = _grid(merged.count)
    per_run = tuple(
        tuple(d.percentile_ms(nines_to_percentile(x)) for x in _grid(d.count)) for d in dists
    )
    return Spectrum(
        phase,
        cell,
        variant,
        len(dists),
        merged.count,
        tuple(grid),
        tuple(merged.percentile_ms(nines_to_percentile(x)) for x in grid),
        per_run,
    )


def env_table(cols: list[EnvColumn]) -> EnvTable | None:
    if not cols:
        return None
    labels = [label for label, _ in cols[0].rows]
    for c in cols[1:]:
        labels += [label for label, _ in c.rows if label not in labels]
    stable = [
        dict(environment_rows({k: v for k, v in c.info.items() if k not in VOLATILE_KEYS}))
        for c in cols
    ]
    full_cols = []
    for c in cols:
        have = dict(c.rows)
        full_cols.append(
            EnvColumn(
                c.label,
                c.host,
                c.experiment_id,
                c.variants,
                c.info,
                tuple((label, have.get(label, "–")) for label in labels),
            )
        )
    differs = tuple(len({s.get(label, "–") for s in stable}) > 1 for label in labels)
    return EnvTable(tuple(full_cols), tuple(labels), differs)


def numeric_params(data: Dataset) -> dict[str, dict[str, float]]:
    """label → number per matrix parameter with at least two numeric values: the values
    stored with the experiment (``{"1K" = 1000}``, ``1K`` read as 1000), else the labels
    read as numbers (imports); parameters that are not numbers are left out."""
    out: dict[str, dict[str, float]] = {}
    for p in data.params:
        try:
            by_key = data.numeric_values(p)
        except InputError:
            continue
        nums = {labels[p]: by_key[key] for key, labels in data.cells if p in labels}
        if len(set(nums.values())) >= 2:
            out[p] = nums
    return out
