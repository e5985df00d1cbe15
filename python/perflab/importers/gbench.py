"""Google Benchmark's JSON (``--benchmark_format=json`` or ``--benchmark_out=FILE``).

Each entry of ``benchmarks`` whose ``run_type`` is ``iteration`` is one sample (with
``--benchmark_repetitions=N``, N of them per benchmark); the aggregates (mean, median,
stddev, cv: ``run_type = "aggregate"``) are skipped, perflab computes its own; a file of
aggregates only (``--benchmark_report_aggregates_only``) falls back to them, one sample per
benchmark (``real_time_mean``, ``real_time_median``, ``real_time_stddev``, the same of
``cpu_time``, and the counters' means), and says so. An entry with ``error_occurred`` is a
failed run.

Mapping:

* ``benchmark`` = the family name (``BM_VectorFind``, the ``run_name`` up to its first
  ``/``); each later part ``key:value`` (``size:100``, ``threads:4``) is parameter
  ``key``, a part without ``:`` (an unnamed argument) is ``arg1``, ``arg2``… by its
  position; all are matrix parameters. The run options Google Benchmark appends
  (``real_time``, ``manual_time``, ``process_time`` as ``timing``; ``iterations:N``,
  ``repeats:N``, ``min_time:T``) are settings: parameters only where they vary.
* ``threads`` (when the name does not carry it) is a parameter only where it varies
  within a file.
* Metrics: ``real_time`` and ``cpu_time`` (better lower) in ``time_unit`` (converted to
  the shortest unit when benchmarks differ), ``bytes_per_second`` (B/s) and
  ``items_per_second`` (items/s), better higher, and each user counter under its name
  (better higher when the name is a rate — ``GB/s``, ``..._per_second`` —, else lower:
  `perflab.importers.model.better_of`, the rule of every importer). ``iterations`` is
  not a metric. ``context`` (host, CPUs, caches, load, library build) is kept.
"""

from __future__ import annotations

from pathlib import Path

from perflab.errors import InputError
from perflab.importers.model import Sample, ToolFile, better_of
from perflab.importers.reading import Node, read_json

#: Fields of a benchmark entry that are not user counters.
_FIELDS = frozenset(
    {
        "name",
        "family_index",
        "per_family_instance_index",
        "run_name",
        "run_type",
        "repetitions",
        "repetition_index",
        "threads",
        "iterations",
        "real_time",
        "cpu_time",
        "time_unit",
        "aggregate_name",
        "aggregate_unit",
        "error_occurred",
        "error_message",
        "label",
        "big_o",
        "rms",
        "complexity_n",
    }
)
_TIME_UNITS = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s"}
_RATES = {"bytes_per_second": "B/s", "items_per_second": "items/s"}


def read(path: Path) -> ToolFile:
    root = read_json(path)
    context = root.opt("context")
    better: dict[str, str] = {"real_time": "lower", "cpu_time": "lower"}
    samples: list[Sample] = []
    aggregates: dict[str, Sample] = {}
    for entry in root.get("benchmarks").items():
        if _is_aggregate(entry):
            _aggregate(entry, aggregates)
            continue
        s = _sample(entry)
        samples.append(s)
    note = None
    if not samples and aggregates:  # --benchmark_report_aggregates_only=true
        samples = list(aggregates.values())
        note = (
            "only Google Benchmark's aggregates are in this file "
            "(--benchmark_report_aggregates_only): one run per benchmark carrying its mean, "
            "median and stddev, so no interval can be computed; report the repetitions "
            "themselves to compare with intervals"
        )
    if not samples:
        raise InputError(f"{path}: $.benchmarks: no benchmark runs")
    for s in samples:
        for name in s.values:
            better.setdefault(name, better_of(name))
    return ToolFile(path, samples, better, dict(context.object()) if context else {}, note=note)


def _aggregate(entry: Node, into: dict[str, Sample]) -> None:
    """An aggregate entry (``mean``, ``median``, ``stddev``; ``cv`` is left out, a ratio)
    added to its benchmark's one summary sample: ``real_time_mean``, ``cpu_time_stddev``…"""
    kind = entry.opt("aggregate_name")
    name = kind.text() if kind is not None else ""
    if name not in ("mean", "median", "stddev"):
        return
    s = _sample(entry)
    if s.status != "ok":
        return
    key = (entry.opt("run_name") or entry.get("name")).text()
    summary = into.setdefault(key, Sample(s.where, s.labels, s.config, {}, {}))
    for metric, value in s.values.items():
        if metric in ("real_time", "cpu_time"):
            summary.values[f"{metric}_{name}"] = value
            summary.units[f"{metric}_{name}"] = s.units[metric]
        elif name == "mean":
            summary.values[metric] = value
            summary.units[metric] = s.units[metric]


def _is_aggregate(entry: Node) -> bool:
    run_type = entry.opt("run_type")
    if run_type is not None:
        kind = run_type.text()
        if kind not in ("iteration", "aggregate"):
            raise run_type.error(f"expected 'iteration' or 'aggregate', found {kind!r}")
        return kind == "aggregate"
    return entry.has("aggregate_name")  # versions before run_type


def _sample(entry: Node) -> Sample:
    where = f"{entry.file}: {entry.at}"
    run_name = entry.opt("run_name") or entry.get("name")
    labels, config = _name_labels(run_name)
    if "threads" not in labels and entry.has("threads"):
        config["threads"] = str(int(entry.get("threads").number()))
    error = entry.opt("error_occurred")
    if error is not None and error.value is True:
        return Sample(where, labels, config, {}, {}, status="failed")
    unit_node = entry.opt("time_unit")
    time_unit = "ns" if unit_node is None else unit_node.text()
    if time_unit not in _TIME_UNITS:
        raise (unit_node or entry).error(
            f"time_unit {time_unit!r}: expected one of {', '.join(_TIME_UNITS)}"
        )
    values: dict[str, float] = {}
    units: dict[str, str] = {}
    for name in ("real_time", "cpu_time"):
        values[name] = entry.get(name).number()
        units[name] = _TIME_UNITS[time_unit]
    for key, raw in entry.object().items():
        if key in _FIELDS or isinstance(raw, str | bool | list | dict) or raw is None:
            continue
        values[key] = entry.get(key).number()
        units[key] = _RATES.get(key, "")
    return Sample(where, labels, config, values, units)


#: Parts of a benchmark's name that are run options Google Benchmark appends (its
#: ``Benchmark::...`` settings), not arguments: the timing a ``UseRealTime()``,
#: ``UseManualTime()`` or ``MeasureProcessCPUTime()`` chose, and ``key:value`` options.
_TIMING_OPTIONS = frozenset({"real_time", "manual_time", "process_time"})
_VALUE_OPTIONS = frozenset({"iterations", "repeats", "min_time", "min_warmup_time", "time_unit"})


def _name_labels(node: Node) -> tuple[dict[str, str], dict[str, str]]:
    """``BM_Find/size:100/8/iterations:5/manual_time`` → ({benchmark: BM_Find, size: 100,
    arg2: 8}, {iterations: 5, timing: manual_time}): the labels, and the run options (a
    parameter only where they vary within a file, as ``threads`` is)."""
    name = node.text()
    base, *parts = name.split("/")
    if not base:
        raise node.error(f"{name!r}: no benchmark name before the first '/'")
    labels = {"benchmark": base}
    options: dict[str, str] = {}
    for position, part in enumerate(parts, 1):
        key, colon, value = part.partition(":")
        if not colon and part in _TIMING_OPTIONS:
            options["timing"] = part
            continue
        if colon and key in _VALUE_OPTIONS:
            options[key] = value
            continue
        if not colon or not key:
            key, value = f"arg{position}", part
        if key in labels:
            raise node.error(f"{key!r} appears twice in the benchmark name {name!r}")
        labels[key] = value
    return labels, options
