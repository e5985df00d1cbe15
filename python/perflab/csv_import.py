"""Loading published per-run results (one CSV row per run) into the store."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import InputError
from perflab.store import MetricDef, NewRun, Store


@dataclass(frozen=True)
class MetricColumn:
    column: str
    better: str
    unit: str = ""

    @classmethod
    def parse(cls, text: str) -> MetricColumn:
        """``COL:higher`` or ``COL:lower``, optionally ``:UNIT`` (e.g. ``p99:lower:ms``)."""
        parts = text.rsplit(":", 2) if text.count(":") >= 2 else text.rsplit(":", 1)
        if len(parts) < 2 or parts[1] not in ("higher", "lower"):
            raise InputError(f"--metric {text!r}: expected COLUMN:higher or COLUMN:lower[:UNIT]")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else _guess_unit(parts[0]))


def _guess_unit(column: str) -> str:
    for suffix, unit in (("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_s", "s"), ("_per_sec", "/s"),
                         ("_pct", "%"), ("_bytes", "B"), ("_kib", "KiB"), ("_mib", "MiB")):
        if column.lower().endswith(suffix):
            return unit
    return ""


def import_csv(store: Store, path: str | Path, *, variant_col: str, param_cols: list[str],
               metrics: list[MetricColumn], baseline: str, name: str | None = None,
               description: str = "") -> int:
    p = Path(path)
    try:
        with open(p, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            rows = list(reader)
    except FileNotFoundError:
        raise InputError(f"CSV file not found: {p}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read {p}: {e}") from None
    if not header:
        raise InputError(f"{p}: empty file (no header row)")
    for col in [variant_col, *param_cols, *(m.column for m in metrics)]:
        if col not in header:
            raise InputError(f"{p}:1: no column '{col}' (columns: {', '.join(header)})")
    if not metrics:
        raise InputError("give at least one --metric COLUMN:higher|lower")
    if not rows:
        raise InputError(f"{p}: no data rows")
    variants: list[str] = []
    cells: list[tuple[str, dict]] = []
    seen_cells: set[str] = set()
    reps: dict[tuple[str, str], int] = {}
    runs: list[NewRun] = []
    for i, row in enumerate(rows):
        line = i + 2
        variant = (row[variant_col] or "").strip()
        if not variant:
            raise InputError(f"{p}:{line}: empty variant in column '{variant_col}'")
        if variant not in variants:
            variants.append(variant)
        labels = {c: (row[c] or "").strip() for c in param_cols}
        key = ",".join(f"{c}={v}" for c, v in labels.items()) or "-"
        if key not in seen_cells:
            seen_cells.add(key)
            cells.append((key, labels))
        values = {}
        for m in metrics:
            raw = (row[m.column] or "").strip()
            try:
                v = float(raw)
            except ValueError:
                raise InputError(f"{p}:{line}: column '{m.column}' is not a number: {raw!r}") from None
            if not math.isfinite(v):
                raise InputError(f"{p}:{line}: column '{m.column}' is not finite: {raw!r}")
            values[m.column] = v
        rep = reps[(key, variant)] = reps.get((key, variant), 0) + 1
        runs.append(NewRun(order_index=i, block=rep - 1, cell_key=key, cell=labels, variant=variant,
                           repetition=rep, status="ok", metrics=values))
    if baseline not in variants:
        raise InputError(f"baseline '{baseline}' is not a value of column '{variant_col}' "
                         f"(values: {', '.join(variants)})")
    if len(variants) < 2:
        raise InputError(f"column '{variant_col}' has a single value ('{variants[0]}'): nothing to compare")
    settings = {
        "params": list(param_cols),
        "cells": [{"key": k, "labels": lab} for k, lab in cells],
        "variants": [{"name": v, "description": ""} for v in variants],
        "confidence": 0.95,
        "imported_from": str(p.resolve()),
    }
    return store.create_experiment(
        name=name or p.stem, description=description or f"imported from {p.name}", source="import",
        baseline=baseline, metrics=[MetricDef(m.column, m.unit, m.better) for m in metrics],
        settings=settings, runs=runs, status="complete")
