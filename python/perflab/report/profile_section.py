"""The report's "Profiles" section: a flame graph per variant (its measured runs' folded
stacks summed), a differential flame graph per candidate against the baseline (inferno:
red grew, blue shrank; the baseline's counts scaled to the candidate's total first), and
the functions whose share of the samples changed, with intervals (`perflab.observe.movers`).

The graphs are inferno's SVGs (`perflab._native.flamegraph_svg`): function names as text,
searchable (Ctrl-F or the Search button) and zoomable (click a frame).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflab.observe.folded import format_folded, merge
from perflab.observe.movers import Mover, RunProfile, top_movers
from perflab.report.blocks import Cell, FlameGraph, Para, Section, Table

#: Top movers shown per (phase, cell, candidate).
MOVERS_SHOWN = 10


@dataclass(frozen=True)
class ProfileReport:
    """What the profiles section shows, drawn once."""

    graphs: tuple[FlameGraph, ...]  # per phase: each variant's, then each candidate's diff
    movers: tuple[Mover, ...]
    notes: tuple[str, ...]  # how it was sampled (event, kernel stacks)


def profile_report(
    profiles: dict[str, list[RunProfile]], variants: list[str], baseline: str, confidence: float
) -> ProfileReport | None:
    """What the section shows of an experiment's profiles, phase → its measured runs'
    (`perflab.observe.movers.read_profiles`); None when there are none."""
    if not profiles:
        return None
    graphs: list[FlameGraph] = []
    for phase, runs in profiles.items():
        graphs += _phase_graphs(phase, runs, variants, baseline)
    movers = top_movers(profiles, baseline, confidence, MOVERS_SHOWN)
    return ProfileReport(tuple(graphs), tuple(movers), _notes(profiles))


def _phase_graphs(
    phase: str, runs: list[RunProfile], variants: list[str], baseline: str
) -> list[FlameGraph]:
    from perflab import _native

    merged = {v: merge(p.stacks for p in runs if p.variant == v) for v in variants}
    counts = {v: sum(1 for p in runs if p.variant == v) for v in variants}
    out = []
    for v in variants:
        if not merged[v]:
            continue
        samples = sum(merged[v].values())
        title = f"{phase} · {v}"
        sub = f"{counts[v]} runs merged, {samples:,} samples"
        svg = _native.flamegraph_svg(format_folded(merged[v]), title, sub)
        out.append(FlameGraph(_key("flame", phase, v), f"Flame graph: {title}", sub, svg))
    for v in variants:
        if v == baseline or not merged[v] or not merged.get(baseline):
            continue
        diff = _native.diff_folded(format_folded(merged[baseline]), format_folded(merged[v]))
        title = f"{phase} · {v} vs {baseline}"
        sub = f"differential: red grew, blue shrank ({baseline} scaled to {v}'s samples)"
        svg = _native.flamegraph_svg(diff, title, sub)
        out.append(
            FlameGraph(_key("diff", phase, v), f"Differential flame graph: {title}", sub, svg)
        )
    return out


def _key(kind: str, phase: str, variant: str) -> str:
    """A file-name stem for the Markdown report's files (``90-flame-work-a``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{phase}-{variant}".lower()).strip("-") or "x"
    return f"90-{kind}-{slug}"


def _notes(profiles: dict[str, list[RunProfile]]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for phase, runs in profiles.items():
        for p in runs:
            i = p.info
            kernel = "with kernel stacks" if i.get("kernel") else "user stacks only"
            seen[
                f"{phase}: perf record -g ({i.get('mode', '?')}), event {i.get('event', '?')}, "
                f"{i.get('frequency', '?')} Hz, {kernel}, on {i.get('host', '?')}"
            ] = None
    return tuple(seen)


def profile_section(profile: ProfileReport) -> Section:
    blocks: list[object] = [
        Para.of(
            "Each run was sampled with perf (",
            "; ".join(profile.notes),
            "). A flame graph per variant sums its runs' samples; a differential graph "
            "colours each function of the candidate by how its share changed against the "
            "baseline. Click a frame to zoom, Search to highlight a function.",
        )
    ]
    if profile.movers:
        blocks.append(_movers_table(profile.movers))
    blocks += profile.graphs
    return Section("profiles", "Profiles", tuple(blocks))  # type: ignore[arg-type]


def _movers_table(movers: tuple[Mover, ...]) -> Table:
    rows = tuple(
        (
            Cell(m.candidate),
            Cell(m.phase + ("" if m.cell in ("", "all") else f" · {m.cell}")),
            Cell(m.function),
            Cell(m.kind),
            Cell(f"{100 * m.baseline_share:.1f}%"),
            Cell(f"{100 * m.candidate_share:.1f}%"),
            Cell(f"{100 * m.change:+.1f} [{100 * m.low:.1f}, {100 * m.high:.1f}]"),
            Cell("yes" if m.significant else "NS"),
        )
        for m in movers
    )
    return Table(
        "Top movers: functions whose share of the samples changed",
        ("variant", "phase", "function", "share", "baseline", "candidate", "change (points)", ""),
        rows,
        (False, False, False, False, True, True, True, False),
        note="Change: the candidate's mean share of the samples minus the baseline's, in "
        "percentage points, with Welch's interval over the runs (each run's profile is one "
        "sample); self = the function itself, total = it and what it calls. Not corrected "
        "for the number of functions compared.",
    )
