"""Loading published per-run results (one CSV row per run) into the store.

The file is read and checked whole (`read_runs_csv`, no store involved) before anything
is stored (`store_runs`), so a bad file writes nothing. Every problem is one `InputError`
with ``file:line``. Lines starting with ``#`` before the header are comments (e.g. where
a test vector's figures come from); a UTF-8 byte-order mark is ignored.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import InputError
from perflab.importers.assemble import MAX_LABEL
from perflab.records import Position
from perflab.store import Database, MetricDef, NewRun

#: Longest field (a published result set's are far shorter; this keeps memory bounded).
#: Its labels are held to the importers' `MAX_LABEL`, as every imported run's are.
MAX_FIELD = 64 << 10


@dataclass(frozen=True)
class MetricColumn:
    column: str
    better: str
    unit: str = ""

    @classmethod
    def parse(cls, text: str) -> MetricColumn:
        """``COL:higher`` or ``COL:lower``, optionally ``:UNIT`` (e.g. ``p99:lower:ms``)."""
        parts = text.rsplit(":", 2) if text.count(":") >= 2 else text.rsplit(":", 1)
        if (
            len(parts) == 3
            and parts[1] not in ("higher", "lower")
            and parts[2] in ("higher", "lower")
        ):
            parts = [f"{parts[0]}:{parts[1]}", parts[2]]  # a column name with a colon
        if len(parts) < 2 or parts[1] not in ("higher", "lower") or not parts[0]:
            raise InputError(f"--metric {text!r}: expected COLUMN:higher or COLUMN:lower[:UNIT]")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else _guess_unit(parts[0]))


def _guess_unit(column: str) -> str:
    for suffix, unit in (
        ("_ms", "ms"),
        ("_us", "µs"),
        ("_ns", "ns"),
        ("_s", "s"),
        ("_per_sec", "/s"),
        ("_pct", "%"),
        ("_bytes", "B"),
        ("_kib", "KiB"),
        ("_mib", "MiB"),
    ):
        if column.lower().endswith(suffix):
            return unit
    return ""


@dataclass(frozen=True)
class CsvRuns:
    """A checked CSV: its runs, variants and cells, ready to store."""

    path: Path
    variants: list[str]
    cells: list[tuple[str, dict[str, str]]]
    runs: list[NewRun]


def import_csv(
    store: Database,
    path: str | Path,
    *,
    variant_col: str,
    param_cols: list[str],
    metrics: list[MetricColumn],
    baseline: str,
    name: str | None = None,
    description: str = "",
) -> int:
    """Read, check and store a CSV of per-run results; returns the new experiment's id."""
    parsed = read_runs_csv(
        path, variant_col=variant_col, param_cols=param_cols, metrics=metrics, baseline=baseline
    )
    return store_runs(
        store,
        parsed,
        param_cols=param_cols,
        metrics=metrics,
        baseline=baseline,
        name=name,
        description=description,
    )


def read_runs_csv(
    path: str | Path,
    *,
    variant_col: str,
    param_cols: list[str],
    metrics: list[MetricColumn],
    baseline: str,
) -> CsvRuns:
    """Parse and check the whole file (InputError with file:line); touches no store."""
    p = Path(path)
    _check_roles(variant_col, param_cols, metrics)
    text = _read_text(p)
    first_line, body = _skip_comments(text)
    rows = _records(p, body, first_line)
    if not rows:
        raise InputError(f"{p}: empty file (no header row)")
    header_line, header = rows[0]
    _check_header(p, header_line, header)
    for col in [variant_col, *param_cols, *(m.column for m in metrics)]:
        if col not in header:
            raise InputError(f"{p}:{header_line}: no column {col!r} (columns: {_listing(header)})")
    data = rows[1:]
    if not data:
        raise InputError(f"{p}: no data rows")
    index = {c: i for i, c in enumerate(header)}
    variants: list[str] = []
    cells: list[tuple[str, dict[str, str]]] = []
    seen_cells: set[str] = set()
    reps: dict[tuple[str, str], int] = {}
    runs: list[NewRun] = []
    for order, (line, row) in enumerate(data):
        if len(row) != len(header):
            raise InputError(
                f"{p}:{line}: {len(row)} field{'s' if len(row) != 1 else ''}; the header has "
                f"{len(header)}"
            )
        variant = _label(p, line, variant_col, row[index[variant_col]])
        if not variant:
            raise InputError(f"{p}:{line}: empty variant in column {variant_col!r}")
        if variant not in variants:
            variants.append(variant)
        labels = {c: _label(p, line, c, row[index[c]]) for c in param_cols}
        key = ",".join(f"{c}={v}" for c, v in labels.items()) or "-"
        if key not in seen_cells:
            seen_cells.add(key)
            cells.append((key, labels))
        values = {m.column: _number(p, line, m.column, row[index[m.column]]) for m in metrics}
        rep = reps[(key, variant)] = reps.get((key, variant), 0) + 1
        runs.append(
            NewRun(
                order_index=order,
                block=rep - 1,
                cell_key=key,
                cell=labels,
                variant=variant,
                repetition=rep,
                status="ok",
                metrics=values,
            )
        )
    if baseline not in variants:
        raise InputError(
            f"baseline {baseline!r} is not a value of column {variant_col!r} "
            f"(values: {_listing(variants)})"
        )
    return CsvRuns(p, variants, cells, runs)


def store_runs(
    store: Database,
    parsed: CsvRuns,
    *,
    param_cols: list[str],
    metrics: list[MetricColumn],
    baseline: str,
    name: str | None = None,
    description: str = "",
    extra_settings: dict[str, Any] | None = None,
    position: Position | None = None,
) -> int:
    """Database checked runs as a complete experiment (``extra_settings``: more to keep in
    its settings, such as what a tool recorded about the machine; ``position``: its
    version and source, its place in a series)."""
    p = parsed.path
    settings = {
        "params": list(param_cols),
        "cells": [{"key": k, "labels": lab} for k, lab in parsed.cells],
        "variants": [{"name": v, "description": ""} for v in parsed.variants],
        "confidence": 0.95,
        "imported_from": str(p.resolve()),
        **(extra_settings or {}),
    }
    return store.create_experiment(
        name=name or p.stem,
        description=description or f"imported from {p.name}",
        source="import",
        baseline=baseline,
        metrics=[MetricDef(m.column, m.unit, m.better) for m in metrics],
        settings=settings,
        runs=parsed.runs,
        status="complete",
        position=position,
    )


def _check_roles(variant_col: str, param_cols: list[str], metrics: list[MetricColumn]) -> None:
    if not metrics:
        raise InputError("give at least one --metric COLUMN:higher|lower")
    for option, cols in (
        ("--param", [variant_col, *param_cols]),
        ("--metric", [m.column for m in metrics]),
    ):
        seen: set[str] = set()
        for col in cols:
            if col in seen:
                what = (
                    "the --variant column"
                    if col == variant_col and option == "--param"
                    else "twice"
                )
                raise InputError(
                    f"{option} {col!r}: given {what}; each column is one parameter or metric"
                )
            seen.add(col)


def _read_text(p: Path) -> str:
    from perflab.importers.reading import read_text

    return read_text(
        p,
        "CSV file",
        text_kind="CSV text file",
        split_hint="; split it",
        encoding_hint="; save the CSV as UTF-8",
    )


def _skip_comments(text: str) -> tuple[int, str]:
    """(line number of the first line after the leading ``#`` comments, the text from there)."""
    pos, line = 0, 1
    while pos < len(text) and text.startswith("#", pos):
        end = text.find("\n", pos)
        if end < 0:
            return line + 1, ""
        pos, line = end + 1, line + 1
    return line, text[pos:]


def _records(p: Path, body: str, first_line: int) -> list[tuple[int, list[str]]]:
    """Non-empty CSV records with the line each starts on."""
    reader = csv.reader(io.StringIO(body, newline=""), strict=True)
    out: list[tuple[int, list[str]]] = []
    start = first_line
    old_limit = csv.field_size_limit(MAX_FIELD)
    try:
        for row in reader:
            if row and any(cell.strip() for cell in row):
                out.append((start, row))
            start = first_line + reader.line_num
    except csv.Error as e:
        where = first_line + max(reader.line_num - 1, 0)
        message = str(e)
        if "field larger than field limit" in message:
            message = f"a field is longer than {MAX_FIELD:,} characters"
        raise InputError(f"{p}:{where}: malformed CSV: {message}") from None
    finally:
        csv.field_size_limit(old_limit)
    return out


def _check_header(p: Path, line: int, header: list[str]) -> None:
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise InputError(f"{p}:{line}: column {col!r} appears twice in the header")
        seen.add(col)


def _label(p: Path, line: int, column: str, raw: str) -> str:
    value = raw.strip()
    if len(value) > MAX_LABEL:
        raise InputError(
            f"{p}:{line}: column {column!r}: a label of {len(value):,} characters "
            f"(at most {MAX_LABEL:,})"
        )
    return value


def _number(p: Path, line: int, column: str, raw: str) -> float:
    text = raw.strip()
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"{p}:{line}: column {column!r} is not a number: {_shown(text)}") from None
    if not math.isfinite(v):
        raise InputError(f"{p}:{line}: column {column!r} is not finite: {_shown(text)}")
    return v


def _listing(names: list[str], limit: int = 20) -> str:
    """``a, b, c`` (control characters escaped, at most ``limit`` names)."""
    shown = [n if n.isprintable() else repr(n)[1:-1] for n in names[:limit]]
    return ", ".join(shown) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "…"
