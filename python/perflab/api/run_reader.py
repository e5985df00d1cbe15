"""The report's per-run data read from the store once (`perflab.report.rundata.RunData`):
through `RunOrigin`s (which stored runs make up which (cell, variant) of the compared
dataset), so a two-experiment comparison reads both experiments the same way. Artifact
names are taken apart by `perflab.store.artifact_keys`, the one place that knows them.
"""

from __future__ import annotations

import json

from perflab.analysis.dataset import Dataset
from perflab.analysis.experiment_pair import RunOrigin
from perflab.observe.monitors import MonitorSeries
from perflab.report.environment import environment_rows
from perflab.report.monitor_runs import MAX_RUNS, MonitorRuns
from perflab.report.rundata import (
    OUTPUT_CHARS,
    OUTPUT_LINES,
    EnvColumn,
    FailedRunInfo,
    RunData,
    RunOutput,
    RunPoint,
    env_table,
    load_process_rows,
    numeric_params,
    spectrum,
)
from perflab.store import Database, RunRow
from perflab.store import artifact_keys as keys
from perflab.workloads.kv_latency import LatencyDistribution
from perflab.workloads.kv_result import KvResultError, merge_histograms


def load_run_data(store: Database, origins: list[RunOrigin], data: Dataset) -> RunData:
    """Everything per run for ``data``, the dataset made of ``origins`` (its metrics are
    kept; its matrix values give the numeric parameters)."""
    reader = _RunReader(store, {m.name for m in data.metrics})
    for origin in origins:
        reader.read(origin)
    outputs = []
    for variant, (eid, r, cell) in reader.last_ok.items():
        outputs += _outputs(store, eid, r, variant, cell)
    spectra = [
        spectrum(phase, cell, variant, dists) for (phase, cell, variant), dists in reader.kv.items()
    ]
    numeric = numeric_params(data)
    return RunData(
        reader.runs,
        reader.failed,
        spectra,
        env_table(reader.env_cols),
        outputs,
        numeric,
        reader.sides if len(origins) > 1 else [],
        load_process_rows(reader.processes),
        load_monitor_runs(store, origins),
    )


class _RunReader:
    """Reads the stored runs of each origin in turn, mapped into the compared dataset;
    the origins' runs follow one another in execution order (``offset``)."""

    def __init__(self, store: Database, metrics: set[str]) -> None:
        self.store = store
        self.metrics = metrics
        self.runs: list[RunPoint] = []
        self.failed: list[FailedRunInfo] = []
        self.sides: list[tuple[int, str]] = []
        self.kv: dict[tuple[str, str, str], list[LatencyDistribution]] = {}
        self.last_ok: dict[str, tuple[int, RunRow, str]] = {}  # variant → (experiment, row, cell)
        self.env_cols: list[EnvColumn] = []
        #: (phase, cell, variant, process) → per run (ops/s, p99 ms, share of the merged ops/s)
        self.processes: dict[tuple[str, str, str, str], list[tuple[float, float, float]]] = {}
        self.offset = 0

    def read(self, origin: RunOrigin) -> None:
        eid = origin.experiment_id
        self.sides.append((self.offset + 1, origin.label))
        values: dict[int, dict[str, float]] = {}
        for run_id, name, value in self.store.metrics(eid):
            if name in self.metrics:
                values.setdefault(run_id, {})[name] = value
        exp = self.store.experiment(eid)
        # Phases with measure = false (e.g. populate): their latencies are not results.
        unmeasured = set(exp.settings.get("unmeasured_phases", []))
        rows = self.store.runs(eid)
        hosts: dict[str, list[str]] = {}  # host → the variants that ran on it
        for r in rows:
            target = origin.mapping.get((r.cell_key, r.variant))
            if target is None:
                continue
            cell, variant = target
            if r.host:
                hosts.setdefault(r.host, [])
                if variant not in hosts[r.host]:
                    hosts[r.host].append(variant)
            self._add_run(eid, r, cell, variant, values.get(r.id, {}), unmeasured)
        self.offset += max((r.order_index + 1 for r in rows), default=0)
        for host, info in self.store.environments(eid).items():
            used = tuple(hosts.get(host, ()))
            label = host if not origin.label else f"{origin.label} · {host}"
            self.env_cols.append(
                EnvColumn(label, host, eid, used, info, tuple(environment_rows(info)))
            )

    def _add_run(
        self,
        eid: int,
        r: RunRow,
        cell: str,
        variant: str,
        values: dict[str, float],
        unmeasured: set[str],
    ) -> None:
        """One run: failed, or a point (and, measured, its latency histograms)."""
        if r.status in ("failed", "timeout"):
            self.failed.append(
                FailedRunInfo(
                    r.order_index + 1, eid, cell, variant, r.repetition, r.status, r.reason or ""
                )
            )
        if r.status != "ok":
            return
        self.runs.append(
            RunPoint(
                self.offset + r.order_index + 1,
                r.order_index + 1,
                eid,
                cell,
                variant,
                r.warmup,
                values,
                r.host,
                r.started_at,
            )
        )
        if r.warmup:
            return
        self.last_ok[variant] = (eid, r, cell)
        merged_ops: dict[str, float] = {}
        per_process: list[tuple[str, str, dict[str, float]]] = []
        for name, _size in self.store.artifact_names(eid, r.id):
            key = keys.parse(name)
            phase, process = key.name, key.process
            if key.kind != "kv" or phase in unmeasured:
                continue
            blob = self.store.artifact(eid, name, r.id)
            if process:  # one load process of a phase run from several: its own figures
                per_process.append((phase, process, _kv_metrics(blob)))
                continue
            merged_ops[phase] = _kv_metrics(blob).get("ops_per_sec", 0.0)
            dist = _kv_distribution(blob)
            if dist is not None:
                self.kv.setdefault((phase, cell, variant), []).append(dist)
        for phase, process, m in per_process:
            ops, total = m.get("ops_per_sec", 0.0), merged_ops.get(phase, 0.0)
            self.processes.setdefault((phase, cell, variant, process), []).append(
                (ops, m.get("p99_latency_ms", 0.0), ops / total if total > 0 else 0.0)
            )


def _kv_metrics(blob: bytes | None) -> dict[str, float]:
    """The flat metrics of a stored kv result ({} when unreadable)."""
    try:
        metrics = json.loads(blob or b"{}").get("metrics") or {}
        return {k: float(v) for k, v in metrics.items()}
    except (ValueError, TypeError, AttributeError):
        return {}


def _kv_distribution(blob: bytes | None) -> LatencyDistribution | None:
    if not blob:
        return None
    try:
        doc = json.loads(blob)
        dist = merge_histograms([doc], "totals")
    except (ValueError, KvResultError, KeyError, TypeError):
        return None  # a result without histograms (or another format): no spectrum
    return dist if dist.count else None


def _outputs(store: Database, eid: int, r: RunRow, variant: str, cell: str) -> list[RunOutput]:
    out = []
    for name, _size in store.artifact_names(eid, r.id):
        if keys.parse(name).kind not in keys.STREAMS:
            continue
        data = store.artifact(eid, name, r.id) or b""
        text = data.decode("utf-8", "replace")
        lines = text.splitlines()
        truncated = len(lines) > OUTPUT_LINES or len(text) > OUTPUT_CHARS
        tail = "\n".join(lines[-OUTPUT_LINES:])[-OUTPUT_CHARS:]
        if tail.strip():
            out.append(RunOutput(variant, r.order_index + 1, eid, cell, name, tail, truncated))
    return out


def load_monitor_runs(store: Database, origins: list[RunOrigin]) -> list[MonitorRuns]:
    found: dict[tuple[str, str, str], list[MonitorSeries]] = {}
    for origin in origins:
        eid = origin.experiment_id
        for r in store.runs(eid, ["ok"]):
            target = origin.mapping.get((r.cell_key, r.variant))
            if target is None or r.warmup:
                continue
            for name, _size in store.artifact_names(eid, r.id):
                key = keys.parse(name)
                if key.kind != "monitor":
                    continue
                runs = found.setdefault((key.name, *target), [])
                if len(runs) >= MAX_RUNS:
                    continue
                try:
                    runs.append(MonitorSeries.from_bytes(store.artifact(eid, name, r.id) or b""))
                except ValueError:
                    continue  # not readable: the run's other data is still shown
    return [MonitorRuns(p, c, v, tuple(s)) for (p, c, v), s in found.items() if s]
