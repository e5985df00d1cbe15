"""hyperfine's JSON (``--export-json FILE``), read by `perflab.workloads.parsers.hyperfine`
(`read_benchmarks`: the one reading of the document, the command-phase parser's too).

Each benchmark is one command; each of its ``times`` is one sample, metric ``time`` in
seconds (better lower), and, where the file has them (hyperfine ≥ 1.17),
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
from perflab.importers.reading import read_json
from perflab.workloads.parsers.base import ParseError
from perflab.workloads.parsers.hyperfine import read_benchmarks


def read(path: Path) -> ToolFile:
    try:
        benchmarks = read_benchmarks(read_json(path).value)
    except ParseError as e:
        raise InputError(f"{path}: {e}") from None
    samples: list[Sample] = []
    better = {"time": "lower"}
    for bench in benchmarks:
        labels = {"command": bench.command}
        for key, value in bench.parameters.items():
            if key in labels:
                raise InputError(f"{path}: {bench.at}.parameters: {key!r} clashes with the command")
            labels[key] = value
        if bench.times is None:
            raise InputError(f"{path}: {bench.at}: no 'times' (each run's time)")
        columns = {"time": (bench.times, "s")}
        if bench.memory is not None:
            columns["max_rss"] = (bench.memory, "B")
            better["max_rss"] = "lower"
        units = {name: unit for name, (_values, unit) in columns.items()}
        for i, code in enumerate(bench.exit_codes):
            where = f"{path}: {bench.at}.times[{i}]"
            if code != 0:
                said = "killed by a signal" if code < 0 else f"exited with status {code}"
                samples.append(Sample(where, labels, {}, {}, {}, "failed", said))
                continue
            row = {name: values[i] for name, (values, _unit) in columns.items()}
            samples.append(Sample(where, labels, {}, row, units))
    return ToolFile(path, samples, better)
