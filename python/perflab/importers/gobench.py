"""Go's benchmark format (`go test -bench`; golang.org/x/perf/benchfmt).

A result line is ``BenchmarkName[/key=value...][-GOMAXPROCS]  ITERATIONS  VALUE UNIT
[VALUE UNIT...]``: each line is one sample (``-count 5`` gives five). A line
``key: value`` (the key a lower-case word without spaces) sets a configuration value for
the results that follow it (``goos``, ``cpu``, ``pkg``, or one a CI job prints, such as
``commit``); ``key:`` alone removes it. ``Unit UNIT better=higher`` says which direction
is better for a unit, ``Unit UNIT assume=exact`` that its values carry no noise. Other
lines (PASS, ok, logs, a bare ``BenchmarkName`` printed by ``go test -v``) are skipped.

Mapping:

* ``benchmark`` = the name without ``Benchmark`` (``Lookup``); each sub-benchmark part
  ``key=value`` is parameter ``key``, a part without ``=`` is ``sub1``, ``sub2``… by its
  position; all are matrix parameters.
* ``gomaxprocs`` (the ``-8`` suffix; 1 when there is none, as ``go test`` omits it then)
  and the configuration keys are parameters only where they vary within a file.
* Metrics are the units as written (``ns/op``, ``B/op``, ``allocs/op``, ``MB/s``, a custom
  ``b.ReportMetric`` unit), their unit the part before ``/op`` (``ns``, ``B``; none for
  ``allocs/op``; ``sec/op`` is ``s``), a time unit that ends a custom unit after a dash
  (``build-real-ns``: ``ns``, as benchstat reads it), or the unit itself. A unit ending in
  ``/s`` is better higher, others lower, unless a ``Unit`` line says otherwise. The iteration count is not a metric.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from perflab.errors import InputError
from perflab.importers.model import Sample, ToolFile, better_of
from perflab.importers.reading import read_text

_GOMAXPROCS = re.compile(r"-(\d+)$")


def read(path: Path) -> ToolFile:
    text = read_text(path)
    config: dict[str, str] = {}
    better: dict[str, str] = {}
    declared: dict[str, str] = {}  # unit → better, from Unit lines
    exact: set[str] = set()  # units whose values are exact (Unit … assume=exact)
    samples: list[Sample] = []
    for number, raw in enumerate(text.split("\n"), 1):  # lines as Go reads them: \n, \r\n
        line, where = raw.removesuffix("\r"), f"{path}:{number}"
        if line.startswith("Benchmark"):
            fields = line.split()
            if len(fields) == 1:
                continue  # `go test -v` prints the name alone before the result
            s = _result(where, fields, config)
            for unit in s.values:
                better.setdefault(unit, declared.get(unit) or _better(unit))
            samples.append(s)
        elif line.startswith("Unit") and line.split(maxsplit=1)[0] == "Unit":
            _unit_line(where, line.split()[1:], declared, exact)
        elif (kv := _config_line(line)) is not None:
            key, value = kv
            if value:
                config[key] = value
            else:
                config.pop(key, None)
    for unit in better:
        better[unit] = declared.get(unit, better[unit])
    if not samples:
        raise InputError(
            f"{path}: no benchmark results (lines like 'BenchmarkName-8  1000  123 ns/op'): "
            "is this `go test -bench` output?"
        )
    return ToolFile(path, samples, better, stated=declared, note=_inexact(samples, exact))


def _inexact(samples: list[Sample], exact: set[str]) -> str | None:
    """What to say when a unit declared exact varies within a benchmark: benchstat then
    reports the values as they are; perflab compares them as noisy measurements (a unit
    that is the same in every run of a benchmark is compared exactly either way)."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], set[float]] = {}
    varied: list[str] = []
    for s in samples:
        for unit in exact & set(s.values):
            key = (unit, tuple(sorted({**s.labels, **s.config}.items())))
            seen = groups.setdefault(key, set())
            seen.add(s.values[unit])
            if len(seen) == 2 and unit not in varied:
                varied.append(unit)
    if not varied:
        return None
    one = len(varied) == 1
    return (
        f"{', '.join(varied)} {'is' if one else 'are'} declared exact (Unit … assume=exact), "
        f"but {'its' if one else 'their'} values vary between runs of one benchmark: "
        "compared as measurements with noise"
    )


def _result(where: str, fields: list[str], config: dict[str, str]) -> Sample:
    name = fields[0].removeprefix("Benchmark")
    if not re.fullmatch(r"[0-9]+", fields[1]):
        raise InputError(f"{where}: iteration count {fields[1]!r} is not a whole number")
    pairs = fields[2:]
    if not pairs:
        raise InputError(f"{where}: no measurements after the iteration count")
    values: dict[str, float] = {}
    units: dict[str, str] = {}
    for i in range(0, len(pairs), 2):
        value = _number(pairs[i])
        if value is None:
            raise InputError(f"{where}: {pairs[i]!r} is not a number (a value before its unit)")
        if not math.isfinite(value):
            raise InputError(f"{where}: value {pairs[i]} is not finite")
        if i + 1 == len(pairs):
            raise InputError(f"{where}: value {pairs[i]} has no unit")
        unit = pairs[i + 1]
        if _number(unit) is not None:
            raise InputError(f"{where}: {unit!r} is not a unit (after value {pairs[i]})")
        if unit in values:
            raise InputError(f"{where}: unit {unit!r} appears twice")
        values[unit] = value
        units[unit] = _unit_of(unit)
    labels, procs = _name_labels(where, name)
    return Sample(where, labels, {**config, "gomaxprocs": procs}, values, units)


def _name_labels(where: str, name: str) -> tuple[dict[str, str], str]:
    """``Lookup/size=100/algo=slice-8`` → ({benchmark: Lookup, size: 100, algo: slice}, "8")."""
    m = _GOMAXPROCS.search(name)
    procs = "1"
    if m:
        name, procs = name[: m.start()], m.group(1)
    base, *parts = name.split("/")
    labels = {"benchmark": base}
    for position, part in enumerate(parts, 1):
        key, eq, value = part.partition("=")
        if not eq or not key:
            key, value = f"sub{position}", part
        if key in labels:
            raise InputError(f"{where}: {key!r} appears twice in the benchmark name {name!r}")
        labels[key] = value
    return labels, procs


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


#: Time units as Go's benchunit writes them (a dash- or slash-separated part of the unit:
#: ``ns/op``, ``sec/op``, a custom ``build-real-ns``), as perflab names them.
_GO_TIME = {"ns": "ns", "us": "us", "µs": "µs", "ms": "ms", "sec": "s", "s": "s"}


def _unit_of(unit: str) -> str:
    """The unit of a value reported in ``unit``: ``ns/op`` → ``ns``, ``allocs/op`` → none,
    ``sec/op`` → ``s``; a custom metric whose last dash-separated part is a time unit is
    a time (``build-real-ns`` → ``ns``, as benchstat scales it)."""
    base = unit.removesuffix("/op")
    if base in ("allocs", "ops"):
        return ""
    last = base.rsplit("-", 1)[-1]
    if last in _GO_TIME and "/" not in base:
        return _GO_TIME[last]
    return base if unit.endswith("/op") else unit


def _better(unit: str) -> str:
    return better_of(unit)


def _unit_line(where: str, fields: list[str], declared: dict[str, str], exact: set[str]) -> None:
    """``Unit UNIT key=value...``: the ``better`` of a unit, and ``assume=exact`` (its
    values carry no noise; ``assume=nothing``, the default, that they do); other metadata
    is benchfmt's to define and is left alone."""
    if not fields:
        raise InputError(f"{where}: a Unit line without a unit")
    unit = fields[0]
    for f in fields[1:]:
        key, eq, value = f.partition("=")
        if not eq or not key:
            raise InputError(f"{where}: expected key=value after the unit, found {f!r}")
        if key == "better":
            if value not in ("higher", "lower"):
                raise InputError(f"{where}: better={value!r}: expected higher or lower")
            declared[unit] = value
        elif key == "assume":
            if value not in ("exact", "nothing"):
                raise InputError(f"{where}: assume={value!r}: expected exact or nothing")
            (exact.add if value == "exact" else exact.discard)(unit)


def _config_line(line: str) -> tuple[str, str] | None:
    """``key: value`` as benchfmt reads it (a key begins with a lower-case letter and has
    no space or upper-case letter; one or more spaces or tabs follow the colon), or None."""
    key, colon, rest = line.partition(":")
    if not colon or not key or not key[0].islower():
        return None
    if any(c.isspace() or c.isupper() for c in key):
        return None
    if not rest:
        return key, ""
    value = rest.lstrip(" \t")
    return (key, value) if value != rest else None
