"""pytest-benchmark's JSON (``--benchmark-json=FILE``, or a file saved with
``--benchmark-save``/``--benchmark-autosave``).

A benchmark whose ``stats.data`` holds its rounds (always in ``--benchmark-json`` since
pytest-benchmark 4, in saved files with ``--benchmark-save-data``) gives one sample per
round, metric ``time`` in seconds per iteration (better lower). Without the rounds it is
one sample carrying the statistics the tool kept: ``mean``, ``median``, ``min``, ``max``,
``stddev``, ``iqr`` (s, better lower) and ``ops`` (1/s, better higher) — a single run, so
no interval can be computed from it.

Mapping: ``benchmark`` = the test's name without its parameters (``test_sort``; the full
``module.py::test_sort`` when two tests share a name), ``group`` when the test has one,
and each of ``params`` (pytest's parametrize arguments: ``size``) are matrix parameters.
``machine_info``, ``commit_info``, ``datetime`` and ``version`` are kept.
"""

from __future__ import annotations

from pathlib import Path

from perflab.errors import InputError
from perflab.importers.model import Sample, ToolFile, better_of
from perflab.importers.reading import Node, label, read_json

#: Statistics kept when the rounds are not in the file, and their unit.
_STATS = {"mean": "s", "median": "s", "min": "s", "max": "s", "stddev": "s", "iqr": "s"}


def read(path: Path) -> ToolFile:
    root = read_json(path)
    entries = root.get("benchmarks").items()
    names = [_base(e.get("name").text()) for e in entries]
    full = [
        _base(e.get("fullname").text()) if e.has("fullname") else n
        for e, n in zip(entries, names, strict=True)
    ]
    ambiguous = {
        n for n in names if len({f for f, m in zip(full, names, strict=True) if m == n}) > 1
    }
    better: dict[str, str] = {}
    samples: list[Sample] = []
    for entry, name, fullname in zip(entries, names, full, strict=True):
        labels = {"benchmark": fullname if name in ambiguous else name}
        group = entry.opt("group")
        if group is not None:
            labels["group"] = group.text()
        params = entry.opt("params")
        if params is not None:
            for key, value in params.object().items():
                if key in labels:
                    raise params.error(f"parameter {key!r} clashes with the benchmark's {key}")
                labels[key] = label(value)
        samples += _samples(entry, labels, better)
    if not samples:
        raise InputError(f"{path}: $.benchmarks: no benchmarks")
    context = {
        k: _lean(k, root.object()[k])
        for k in ("machine_info", "commit_info", "datetime", "version")
        if root.has(k)
    }
    return ToolFile(path, samples, better, context)


def _samples(entry: Node, labels: dict[str, str], better: dict[str, str]) -> list[Sample]:
    stats = entry.get("stats")
    data = stats.opt("data")
    if data is not None:
        better.setdefault("time", "lower")
        return [
            Sample(f"{n.file}: {n.at}", labels, {}, {"time": n.number()}, {"time": "s"})
            for n in data.items()
        ]
    values = {k: stats.get(k).number() for k in _STATS if stats.has(k)}
    units = {k: _STATS[k] for k in values}
    if stats.has("ops"):
        values["ops"], units["ops"] = stats.get("ops").number(), "/s"
    if not values:
        raise stats.error("neither the rounds ('data') nor their statistics ('mean', …)")
    for k in values:
        better.setdefault(k, better_of(k))
    return [Sample(f"{stats.file}: {stats.at}", labels, {}, values, units)]


def _base(name: str) -> str:
    """A test's name without its parameters: ``test_sort[100]`` → ``test_sort``."""
    return name.split("[", 1)[0] if name.endswith("]") else name


def _lean(key: str, value: object) -> object:
    """``machine_info`` without the CPU's list of feature flags (hundreds of words)."""
    if key == "machine_info" and isinstance(value, dict) and isinstance(value.get("cpu"), dict):
        cpu = {k: v for k, v in value["cpu"].items() if k != "flags"}
        return {**value, "cpu": cpu}
    return value
