"""Results of the benchmark tools people already run, read as perflab runs.

``perflab import --format FORMAT FILE...`` brings a tool's result files into the store so
that their history can be compared like any experiment. Each format has its own module
with ``read(path) -> ToolFile`` (`model.py`): the tool's samples — one per run, repetition
or round the tool kept — with the labels that name each benchmark, the configuration it
ran under and its metrics. `assemble.py` turns the files into variants, matrix cells and
runs (one `ToolRuns`, the shape a CSV import has), checked whole before anything is
stored; the command line stores it with the CSV import's `store_runs`, the one code path
that writes an imported experiment.

Every problem is one `InputError` naming ``file:line`` (text formats) or the file and a
JSON path (``file: $.benchmarks[3].real_time``); nothing is written then.

The mapping of each format (documented in docs/cli.md, "perflab import"):

* each FILE is a variant named after it (``old.txt`` → ``old``), unless
  ``--variant-from KEY`` takes the variant from a parameter or configuration key; an
  import needs two variants (as a CSV import does);
* what names a benchmark (its name, sub-benchmark keys, arguments) becomes matrix
  parameters, ``benchmark`` first;
* a setting the tool records per result (Go's ``key: value`` lines and GOMAXPROCS,
  Google Benchmark's threads) becomes a parameter only where it varies within one file;
  otherwise it is kept with the experiment as that file's context;
* times are metrics with their unit and ``better = "lower"``; rates are ``"higher"``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.importers.assemble import ToolRuns

#: ``--format`` name → the module that reads it (each has ``read(path) -> ToolFile``).
FORMATS = {
    "gobench": "perflab.importers.gobench",
    "gbench": "perflab.importers.gbench",
    "pytest-benchmark": "perflab.importers.pytest_benchmark",
    "hyperfine": "perflab.importers.hyperfine",
    "criterion": "perflab.importers.criterion",
}


def read_results(
    fmt: str,
    paths: list[str] | list[Path],
    *,
    variant_from: str | None = None,
    baseline: str | None = None,
) -> ToolRuns:
    """Read and check every file of format ``fmt``; the runs to store (nothing stored)."""
    from perflab.importers.assemble import assemble

    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})")
    reader = importlib.import_module(FORMATS[fmt])
    files = [reader.read(Path(p)) for p in paths]
    return assemble(fmt, files, variant_from=variant_from, baseline=baseline)
