"""The one-line facts under a report's title: each experiment's source, dates, design
and hosts, then the variants, matrix and metrics, then the statistics used."""

from __future__ import annotations

import datetime as dt
from typing import Any

from perflab.analysis.comparison_table import ComparisonTable
from perflab.records import ExperimentRow
from perflab.report.numbers import describe_overhead, method_words
from perflab.report.rundata import RunData


def meta_lines(
    result: ComparisonTable, runs: RunData, experiments: list[ExperimentRow]
) -> list[str]:
    out = [_experiment_line(e, runs) for e in experiments]
    data = result.dataset
    matrix = "; ".join(
        f"{p}: {', '.join(dict.fromkeys(lab.get(p, '') for _, lab in data.cells))}"
        for p in data.params
    )
    out.append(
        "variants: "
        + ", ".join(v + (" (the baseline)" if v == data.baseline else "") for v in data.variants)
        + (f" · matrix: {matrix}" if matrix else "")
        + " · metrics: "
        + ", ".join(
            f"{m.name} ({m.unit}, {m.better} is better)"
            if m.unit
            else f"{m.name} ({m.better} is better)"
            for m in data.metrics
        )
    )
    out.append(
        "statistics: "
        + method_words(result.method, [c.comparison for c in result.comparisons if c.comparison])
        + f", {result.confidence:.0%} confidence"
        + (f", practical threshold ±{result.threshold:.1%}" if result.threshold else "")
    )
    return out


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "–"


def _experiment_line(e: ExperimentRow, runs: RunData) -> str:
    hosts = sorted({r.host for r in runs.runs if r.host and r.experiment_id == e.id})
    n_ok = sum(1 for r in runs.runs if r.experiment_id == e.id and not r.warmup)
    return (
        f"experiment {e.id} ({e.name}{_position(e)}): {e.source}, {_when(e.created_at)}"
        + (f" – {_when(e.finished_at)}" if e.finished_at else "")
        + f", {e.status}{_design(e.settings)}; {n_ok} measured runs"
        + (f" on {', '.join(hosts)}" if hosts else "")
    )


def _position(e: ExperimentRow) -> str:
    """``, version v1.5 at commit 1a2b3c4d5e6f`` when it has one (its place in a series)."""
    commit = f"commit {e.source_commit[:12]}" if e.source_commit else ""
    if e.version:
        return f", version {e.version}" + (f" at {commit}" if commit else "")
    return f", {commit}" if commit else ""


def _design(s: dict[str, Any]) -> str:
    """ ", 10 runs + 1 warm-up per cell and variant, interleaved (seed 1)…" for a run
    experiment; empty for an import."""
    if "repetitions" not in s:
        return ""
    warm = f" + {s['warmup']} warm-up" if s.get("warmup") else ""
    reps = s["repetitions"]
    runs_per = (
        f"{reps} runs"
        if not isinstance(reps, dict)
        else f"{s.get('adaptive', {}).get('blocks', reps.get('min'))} runs (adaptive {reps.get('min')}…"
        f"{reps.get('max')} until ±{float(reps.get('target_ci', 0)):.2%})"
    )
    design = (
        f", {runs_per}{warm} per cell and variant, "
        f"{s.get('order', 'interleaved')} (seed {s.get('seed')})"
    )
    if s.get("adaptive", {}).get("summary"):
        design += "; " + s["adaptive"]["summary"]
    for name, source in (s.get("overheads") or {}).items():
        design += f"; {name} is net of {describe_overhead(source)} (measured in each run)"
    return design
