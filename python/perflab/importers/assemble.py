"""A tool's result files as one experiment's variants, matrix cells and runs.

* Variant: each file is one, named after it (``old.txt`` → ``old``; the paths as given
  when two names would be the same), unless ``variant_from`` names a key whose value is
  the variant (it then leaves the matrix).
* Parameters: the keys that name a benchmark (`Sample.labels`), in order of first
  appearance, then the configuration keys (`Sample.config`) that vary within a file. A
  configuration key that is the same throughout a file is that file's context.
* Metrics: in order of first appearance; a metric whose samples came in several time
  units (Google Benchmark's per-benchmark ``time_unit``) is converted to the shortest.
* Runs: in file order; the repetition counts the runs of a (cell, variant) from 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.importers.model import TIME_UNITS, Sample, ToolFile, convert_time
from perflab.store import NewRun

#: Longest variant or parameter label of an imported run (a tool's file or a CSV): a command
#: line hyperfine timed is one, whole (a table folds it for display; the record keeps it
#: as written).
MAX_LABEL = 4096


@dataclass(frozen=True)
class Metric:
    name: str
    better: str  # "higher" | "lower"
    unit: str


@dataclass(frozen=True)
class ToolRuns:
    """Checked results, ready to store: the fields of a CSV import (`path`, `variants`,
    `cells`, `runs`; `params`, `metrics`, `baseline`), a default name and description,
    and what the tools recorded (`settings`, kept with the experiment)."""

    path: Path
    variants: list[str]
    cells: list[tuple[str, dict[str, str]]]
    runs: list[NewRun]
    params: list[str]
    metrics: list[Metric]
    baseline: str
    name: str
    description: str
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()  # what a reader fell back to, said to the user
    #: what makes the comparison less than it seems (files measured on unlike setups)
    warnings: tuple[str, ...] = ()


def assemble(
    fmt: str, files: list[ToolFile], *, variant_from: str | None, baseline: str | None
) -> ToolRuns:
    if not files:
        raise InputError("no result files given")
    for f in files:
        if not f.samples:
            raise InputError(f"{f.path}: no benchmark results in this file")
    if not any(s.status == "ok" for f in files for s in f.samples):
        raise InputError(
            f"{files[0].path}: every run in {'these files' if len(files) > 1 else 'this file'} "
            "failed: nothing was measured"
        )
    names = _file_variants([f.path for f in files])
    varying = [_varying_config(f.samples) for f in files]
    params = _params(files, varying, variant_from)
    metrics = _metrics(files)
    variants, cells, runs = _runs(files, names, params, metrics, variant_from)
    if baseline is not None and baseline not in variants:
        raise InputError(f"--baseline {baseline!r} is not a variant (variants: {_list(variants)})")
    base = [f.path.name for f in files]  # the paths as given where two names are one
    unlike = _differing_setup(files, base, varying, variant_from)  # said now, and kept
    shown = ", ".join(base if len(set(base)) == len(base) else [str(f.path) for f in files])
    return ToolRuns(
        path=files[0].path,
        variants=variants,
        cells=cells,
        runs=runs,
        params=params,
        metrics=list(metrics.values()),
        baseline=baseline if baseline is not None else variants[0],
        name=names[0],
        description=f"imported from {shown} ({fmt})",
        notes=tuple(f"{f.path}: {f.note}" for f in files if f.note),
        warnings=unlike,
        settings={
            "import": {
                "format": fmt,
                "warnings": list(unlike),
                "variant_from": variant_from,
                "files": [
                    _file_settings(f, None if variant_from else v, vary)
                    for f, v, vary in zip(files, names, varying, strict=True)
                ],
            }
        },
    )


def _runs(
    files: list[ToolFile],
    names: list[str],
    params: list[str],
    metrics: dict[str, Metric],
    variant_from: str | None,
) -> tuple[list[str], list[tuple[str, dict[str, str]]], list[NewRun]]:
    """(variants, cells, runs) of the samples, in file order."""
    variants: list[str] = []
    cells: dict[str, dict[str, str]] = {}
    reps: dict[tuple[str, str], int] = {}
    runs: list[NewRun] = []
    for f, file_variant in zip(files, names, strict=True):
        for s in f.samples:
            keys = {**s.config, **s.labels}
            variant = _variant_of(s, keys, variant_from) if variant_from else file_variant
            if variant not in variants:
                variants.append(variant)
            # a benchmark without a parameter has it empty, as an empty CSV field is
            labels = {p: _label(s, p, keys.get(p, "")) for p in params}
            key = ",".join(f"{p}={v}" for p, v in labels.items()) or "-"
            cells.setdefault(key, labels)
            rep = reps[(key, variant)] = reps.get((key, variant), 0) + 1
            runs.append(
                NewRun(
                    order_index=len(runs),
                    block=rep - 1,
                    cell_key=key,
                    cell=labels,
                    variant=variant,
                    repetition=rep,
                    status=s.status,
                    metrics=_values(s, metrics) if s.status == "ok" else None,
                    reason=s.reason,
                )
            )
    return variants, list(cells.items()), runs


def _file_variants(paths: list[Path]) -> list[str]:
    """Each file's variant name: its stem, or the path as given when stems collide."""
    stems = [p.stem or p.resolve().name or str(p) for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    shown = [str(p) for p in paths]
    if len(set(shown)) != len(shown):
        raise InputError(f"{shown[0]}: a file given twice")
    return shown


def _varying_config(samples: list[Sample]) -> set[str]:
    """The configuration keys that do not have one value throughout a file (a key that
    some samples lack varies too)."""
    values: dict[str, set[str | None]] = {}
    for s in samples:
        for k in s.config:
            values.setdefault(k, set())
    for s in samples:
        for k, seen in values.items():
            seen.add(s.config.get(k))
    return {k for k, seen in values.items() if len(seen) > 1}


def _params(files: list[ToolFile], varying: list[set[str]], variant_from: str | None) -> list[str]:
    names: dict[str, None] = {}
    for f in files:
        for s in f.samples:
            names.update(dict.fromkeys(s.labels))
    for f, vary in zip(files, varying, strict=True):
        for s in f.samples:
            names.update(dict.fromkeys(k for k in s.config if k in vary))
    if variant_from is not None:
        known = {k for f in files for s in f.samples for k in (*s.labels, *s.config)}
        if variant_from not in known:
            raise InputError(
                f"--variant-from {variant_from!r}: no such parameter or configuration key "
                f"(keys: {_list(sorted(known))})"
            )
        names.pop(variant_from, None)
        for restated in _restating(files, list(names), variant_from):
            names.pop(restated)
    return list(names)


def _restating(files: list[ToolFile], names: list[str], variant_from: str) -> list[str]:
    """Labels that only restate the variant: one value per variant, a different one for
    each (hyperfine's ``command`` in a ``--parameter-scan``: ``sleep 0.1`` for delay 0.1):
    as matrix parameters they would put every variant in a cell of its own."""
    out = []
    for name in names:
        seen: dict[str, set[str]] = {}
        for f in files:
            for s in f.samples:
                keys = {**s.config, **s.labels}
                if variant_from in keys and name in keys:
                    seen.setdefault(keys[variant_from], set()).add(keys[name])
        values = [v for vs in seen.values() for v in vs]
        one_each = len(seen) > 1 and all(len(vs) == 1 for vs in seen.values())
        if one_each and len(set(values)) == len(values):
            out.append(name)
    return out


def _variant_of(s: Sample, keys: dict[str, str], variant_from: str) -> str:
    if variant_from not in keys:
        raise InputError(
            f"{s.where}: no {variant_from!r} here to name the variant (--variant-from); "
            f"keys: {_list(list(keys))}"
        )
    value = _label(s, variant_from, keys[variant_from])
    if not value:
        raise InputError(f"{s.where}: {variant_from!r} is empty: it cannot name a variant")
    return value


def _label(s: Sample, key: str, value: str) -> str:
    if len(value) > MAX_LABEL:
        raise InputError(
            f"{s.where}: {key} {value[:40]!r}…: a label of {len(value):,} characters (at "
            f"most {MAX_LABEL:,})"
        )
    return value


def _metrics(files: list[ToolFile]) -> dict[str, Metric]:
    """Each metric with its direction and one unit: the unit of its samples, or the
    shortest of their time units when they came in several."""
    better: dict[str, str] = {}
    for f in files:
        for name, b in f.better.items():
            better.setdefault(name, b)
    for f in files:
        better.update((name, b) for name, b in f.stated.items() if name in better)
    units: dict[str, dict[str, str]] = {name: {} for name in better}  # unit → first sample
    for f in files:
        for s in f.samples:
            for name in s.values:
                if name not in units:
                    raise AssertionError(f"{s.where}: metric {name!r} has no direction")
                units[name].setdefault(s.units.get(name, ""), s.where)
    out: dict[str, Metric] = {}
    for name, seen in units.items():
        if not seen:
            continue
        if len(seen) > 1 and not all(u in TIME_UNITS for u in seen):
            (u1, w1), (u2, w2) = list(seen.items())[:2]
            raise InputError(
                f"{w2}: metric {name!r} is in {u2 or 'no unit'} here but in "
                f"{u1 or 'no unit'} at {w1}: one metric has one unit"
            )
        unit = min(seen, key=lambda u: TIME_UNITS[u]) if len(seen) > 1 else next(iter(seen))
        out[name] = Metric(name, better[name], "µs" if unit == "us" else unit)
    return out


def _values(s: Sample, metrics: dict[str, Metric]) -> dict[str, float]:
    out = {}
    for name, v in s.values.items():
        unit, target = s.units.get(name, ""), metrics[name].unit
        if unit != target and unit in TIME_UNITS and target in TIME_UNITS:
            v = convert_time(v, unit, target)
        out[name] = v
    return out


#: Words of keys that name the version a file measured or when and by which program it
#: ran (they differ between two nights by design): ``commit``, ``library_version``, ``date``.
_VERSION_WORDS = frozenset({"commit", "branch", "revision", "sha", "version", "tag", "date",
                            "time", "executable", "load", "avg"})  # fmt: skip


def _differing_setup(
    files: list[ToolFile], names: list[str], varying: list[set[str]], variant_from: str | None
) -> tuple[str, ...]:
    """A warning when the files say they were measured differently — a configuration line
    (Go's ``cpu:``, ``pkg:``, ``note:``) or a tool's context value (Google Benchmark's
    ``num_cpus``, ``library_build_type``) with one value throughout each file but not
    the same in all: then their variants differ in more than the code."""
    if len(files) < 2:
        return ()
    per_file: list[dict[str, str]] = []
    for f, vary in zip(files, varying, strict=True):
        mine: dict[str, str] = {}
        for smp in f.samples:
            for k, v in smp.config.items():
                if k not in vary and k != variant_from:
                    mine.setdefault(k, v)
        for k, v in f.context.items():
            if isinstance(v, (str, int, float, bool)):
                mine.setdefault(k, str(v))
        per_file.append(mine)
    keys = dict.fromkeys(k for mine in per_file for k in mine)
    seen = {k: [mine.get(k, "(none)") for mine in per_file] for k in keys}
    differ = [
        k
        for k, values in seen.items()
        if len(set(values)) > 1 and not _VERSION_WORDS & set(re.split(r"[^a-z0-9]+", k.lower()))
    ]
    if not differ:
        return ()
    said = "; ".join(
        f"{k}: " + ", ".join(f"{n} {v!r}" for n, v in zip(names, seen[k], strict=True))
        for k in differ[:3]
    )
    more = f" and {len(differ) - 3} more" if len(differ) > 3 else ""
    said = (
        f"the files were not measured alike ({said}{more}): their variants differ in more "
        "than the code; compare files of one setup, or read the change with that in mind"
    )
    return (said,)


def _file_settings(f: ToolFile, variant: str | None, varying: set[str]) -> dict[str, Any]:
    """What is kept of a file: where it was, its variant (None when the variants came
    from a key), the tool's context and the configuration that was the same throughout it."""
    config: dict[str, str] = {}
    for s in f.samples:
        for k, v in s.config.items():
            if k not in varying:
                config.setdefault(k, v)
    out: dict[str, Any] = {"path": str(f.path.resolve()), "variant": variant}
    if config:
        out["config"] = config
    if f.context:
        out["context"] = f.context
    return out


def _list(names: list[str], limit: int = 20) -> str:
    shown = [n if n.isprintable() else repr(n)[1:-1] for n in names[:limit]]
    return ", ".join(shown) + (f" and {len(names) - limit} more" if len(names) > limit else "")
