"""hyperfine's JSON (``--export-json FILE``).

Each entry of ``results`` is one command; each of its ``times`` is one sample, metric
``time`` in seconds (better lower), and, where the file has them (hyperfine ≥ 1.17),
``memory_usage_byte`` per run as ``max_rss`` in bytes (better lower). A run whose
``exit_codes`` entry is not 0 (kept with ``--ignore-failure``) is a failed run. The mean,
stddev, user and system times are summaries: perflab computes its own from the runs.

Mapping: ``command`` (the command line, or its ``--command-name``) and each of
``parameters`` (``-P``/``-L``: ``n``) are matrix parameters. To compare the commands of
one file with each other, take the variant from the command: ``--variant-from command``.
"""

from __future__ import annotations

from pathlib import Path

from perflab.errors import InputError
from perflab.importers.model import Sample, ToolFile
from perflab.importers.reading import Node, read_json


def read(path: Path) -> ToolFile:
    root = read_json(path)
    samples: list[Sample] = []
    better = {"time": "lower"}
    for result in root.get("results").items():
        labels = {"command": result.get("command").text()}
        params = result.opt("parameters")
        if params is not None:
            for key in params.object():
                if key in labels:
                    raise params.error(f"parameter {key!r} clashes with the command")
                labels[key] = params.get(key).text()
        times = result.get("times")
        columns = {"time": (times, times.numbers(), "s")}
        memory = result.opt("memory_usage_byte")
        if memory is not None:
            columns["max_rss"] = (memory, memory.numbers(), "B")
            better["max_rss"] = "lower"
        codes = _exit_codes(result, len(times.items()))
        for column, values, _unit in columns.values():
            if len(values) != len(codes):
                raise column.error(f"{len(values)} values for {len(codes)} runs")
        units = {name: u for name, (_n, _v, u) in columns.items()}
        for i, code in enumerate(codes):
            where = f"{path}: {times.at}[{i}]"
            if code != 0:
                said = "killed by a signal" if code < 0 else f"exited with status {code}"
                samples.append(Sample(where, labels, {}, {}, {}, "failed", said))
                continue
            row = {name: v[i] for name, (_n, v, _u) in columns.items()}
            samples.append(Sample(where, labels, {}, row, units))
    if not samples:
        raise InputError(f"{path}: $.results: no commands")
    return ToolFile(path, samples, better)


def _exit_codes(result: Node, runs: int) -> list[int]:
    """Each run's exit status (0 for every run when the file has none; a signal: null)."""
    node = result.opt("exit_codes")
    if node is None:
        return [0] * runs
    return [-1 if c.value is None else int(c.number()) for c in node.items()]
