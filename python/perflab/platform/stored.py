"""Probe results in the results store: recording a probe run as an experiment, and
reading one platform's model inputs (cpu score, memmove bandwidth, benchmark rate)
back from a store — one store per machine, so several stores make several platforms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perflab.analysis.dataset import Dataset, load_dataset
from perflab.errors import InputError
from perflab.model import Observation, bytes_per_second
from perflab.store import Database, MetricDef, NewRun
from perflab.store.location import StoreURL, store_location
from perflab.workloads.probes import ProbeResult

LOWER_IS_BETTER_UNITS = ("ns/access",)


def record_probe(store: Database, result: ProbeResult, *, name: str | None = None) -> int:
    """Stores ``result`` as a complete experiment (one run per repeat); returns its id.

    The variant is the host name, so probes of several machines imported into one
    store stay apart.
    """
    host = result.host.get("hostname") or "localhost"
    metrics = [
        MetricDef(
            m, result.units[m], "lower" if result.units[m] in LOWER_IS_BETTER_UNITS else "higher"
        )
        for m in result.samples
    ]
    runs = [
        NewRun(
            order_index=i,
            block=i,
            cell_key="-",
            cell={},
            variant=host,
            repetition=i + 1,
            status="ok",
            metrics={m: v[i] for m, v in result.samples.items() if i < len(v)},
        )
        for i in range(result.repeat)
    ]
    settings = {
        "params": [],
        "cells": [{"key": "-", "labels": {}}],
        "variants": [{"name": host, "description": result.host.get("cpu_model", "")}],
        "confidence": 0.95,
        "probe": result.to_json(),
    }
    eid = store.create_experiment(
        name=name or f"probe-{result.probe}",
        description=f"perflab probe {result.probe}",
        source="probe",
        baseline=host,
        metrics=metrics,
        settings=settings,
        runs=runs,
        status="complete",
    )
    store.put_environment(eid, host, result.host, {})
    return eid


def observation_from_store(
    path: str | Path,
    *,
    cpu: str,
    memmove: str,
    memmove_unit: str,
    rate: str | None,
    length_bytes: float,
    platform: str | None = None,
    variant: str | None = None,
    cell: str | None = None,
    rate_optional: bool = False,
) -> Observation:
    """One platform from the store at ``path``: for each metric, the latest experiment that
    has it; its median over successful runs.

    variant/cell: choose among several variants or cells that have the metric.
    rate: the benchmark metric (packets/s); None for a platform to predict.
    rate_optional: a missing rate metric gives ``rate=None`` instead of an error (a
    platform to predict whose store may also hold an observed rate to compare with).
    """
    p = store_location(path)
    if isinstance(p, Path) and not p.is_file():
        raise InputError(f"no store at {p}")
    if not (math.isfinite(length_bytes) and length_bytes > 0):
        raise InputError(f"packet length must be positive, not {length_bytes}")
    with Database(p, write=False, create=False) as store:
        experiments = [e for e, _ in store.experiments()]
        datasets = [load_dataset(store, e.id) for e in sorted(experiments, key=lambda e: -e.id)]
        hosts: list[str] = []
        values: dict[str, float] = {}
        for metric in [m for m in (cpu, memmove, rate) if m]:
            try:
                values[metric], host = _latest_median(datasets, metric, variant, cell, p)
            except InputError:
                if metric == rate and rate_optional:
                    continue
                raise
            if host:
                hosts.append(host)
            else:
                for ds in datasets:
                    hosts.extend(store.environments(ds.experiment.id))
    name = platform or (hosts[0] if hosts else (p.name if isinstance(p, StoreURL) else p.stem))
    return Observation(
        platform=name,
        cpu=values[cpu],
        memmove=values[memmove] * bytes_per_second(memmove_unit),
        length=float(length_bytes),
        rate=values.get(rate) if rate else None,
    )


def _latest_median(
    datasets: Sequence[Dataset],
    metric: str,
    variant: str | None,
    cell: str | None,
    path: Path | StoreURL,
) -> tuple[float, str | None]:
    for ds in datasets:
        keys = [
            k
            for k in ds.samples
            if k[2] == metric
            and (variant is None or k[1] == variant)
            and (cell is None or k[0] == cell)
        ]
        if not keys:
            continue
        if len(keys) > 1:
            where = ", ".join(f"variant {v!r} cell {c!r}" for c, v, _ in keys)
            raise InputError(
                f"metric {metric!r} has several samples in experiment {ds.experiment.name!r} "
                f"of {path} ({where}): choose one with --variant/--cell"
            )
        values = ds.samples[keys[0]]
        if ds.experiment.source == "probe":
            return float(np.median(values)), keys[0][1]  # its variant is the host
        return float(np.median(values)), None
    have = sorted({k[2] for ds in datasets for k in ds.samples})
    raise InputError(
        f"no experiment in {path} has metric {metric!r}"
        + (f" (for variant {variant!r})" if variant else "")
        + f"; metrics there: {', '.join(have) or 'none'}",
        hint="record probes with `perflab probe … --store`",
    )
