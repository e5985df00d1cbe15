"""Profiles read back from a store, and the functions whose share of the CPU samples
changed, with intervals.

Each run's profile is one sample: the share of its samples in each function (self: the
function is the leaf; total: anywhere on the stack) is a per-run value, and a candidate's
shares are compared with the baseline's by the same statistics as any metric (Welch, via
`perflab.stats.get_method`), within each cell. The change is told in percentage points of
the samples ("spin_beta: +38.0 [31.2, 44.9] points of samples"): a function absent from
the baseline has no relative change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.store import Database
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.observe.folded import Stacks

#: Functions below this share of the samples in every run are not compared.
MIN_SHARE = 0.01


@dataclass(frozen=True)
class RunProfile:
    run_id: int
    variant: str
    cell: str  # the run's cell key
    stacks: Stacks
    info: dict[str, object]


@dataclass(frozen=True)
class Mover:
    """One function whose share of ``phase``'s samples changed from baseline to candidate
    (fractions: 0.38 = 38 points)."""

    phase: str
    cell: str
    candidate: str
    function: str
    kind: str  # "self" | "total"
    baseline_share: float  # mean over the baseline's runs
    candidate_share: float
    change: float  # candidate − baseline, in shares
    low: float
    high: float
    p_value: float
    significant: bool
    n_baseline: int
    n_candidate: int

    def line(self) -> str:
        """ "spin_beta: +38.0 [31.2, 44.9] points of samples (self; 2.1% → 40.1%)"."""
        return (
            f"{self.function}: {100 * self.change:+.1f} [{100 * self.low:.1f}, "
            f"{100 * self.high:.1f}] points of samples ({self.kind}; "
            f"{100 * self.baseline_share:.1f}% → {100 * self.candidate_share:.1f}%)"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "phase": self.phase,
            "cell": self.cell,
            "candidate": self.candidate,
            "function": self.function,
            "kind": self.kind,
            "baseline_share": self.baseline_share,
            "candidate_share": self.candidate_share,
            "change": self.change,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "significant": self.significant,
            "n_baseline": self.n_baseline,
            "n_candidate": self.n_candidate,
        }


def read_profiles(store: Database, eid: int) -> dict[str, list[RunProfile]]:
    """phase → the profiles of the experiment's measured ok runs, in run order."""
    out: dict[str, list[RunProfile]] = {}
    profiled = store.runs_with_artifact(eid, keys.prefix("profile"))
    if not profiled:  # one query when nothing was profiled: compare stays fast
        return out
    from perflab.observe.folded import decompress, parse_folded

    for r in store.runs(eid, ["ok"]):
        if r.warmup:
            continue
        for name in profiled.get(r.id, []):
            phase = keys.parse(name).name
            blob = store.artifact(eid, name, r.id)
            info_blob = store.artifact(eid, keys.profile_info(phase), r.id)
            if blob is None:
                continue
            info = json.loads(info_blob) if info_blob else {}
            stacks = parse_folded(decompress(blob))
            out.setdefault(phase, []).append(RunProfile(r.id, r.variant, r.cell_key, stacks, info))
    return out


def top_movers(
    profiles: dict[str, list[RunProfile]],
    baseline: str,
    confidence: float = 0.95,
    limit: int = 10,
) -> list[Mover]:
    """The functions whose share changed most (largest |change|, significant first), over
    every phase, cell and candidate; at most ``limit`` per (phase, cell, candidate)."""
    out: list[Mover] = []
    for phase, runs in profiles.items():
        cells = dict.fromkeys(p.cell for p in runs)
        for cell in cells:
            here = [p for p in runs if p.cell == cell]
            base = [p.stacks for p in here if p.variant == baseline]
            for candidate in dict.fromkeys(p.variant for p in here if p.variant != baseline):
                cand = [p.stacks for p in here if p.variant == candidate]
                movers = _movers(phase, cell, candidate, base, cand, confidence)
                out += _ranked(movers)[:limit]
    return out


def _movers(
    phase: str,
    cell: str,
    candidate: str,
    base: Sequence[Stacks],
    cand: Sequence[Stacks],
    confidence: float,
) -> list[Mover]:
    if len(base) < 2 or len(cand) < 2:
        return []
    from perflab.observe.folded import shares
    from perflab.stats import get_method

    welch = get_method("welch", interval="difference")
    a, b = [shares(s) for s in base], [shares(s) for s in cand]
    out = []
    for kind in ("self", "total"):
        table_a = [x.self_share if kind == "self" else x.total_share for x in a]
        table_b = [x.self_share if kind == "self" else x.total_share for x in b]
        for f in _functions(table_a + table_b):
            xa = [t.get(f, 0.0) for t in table_a]
            xb = [t.get(f, 0.0) for t in table_b]
            c = welch.compare(xa, xb, confidence)
            # the interval of the difference of means, back in shares (Welch's difference
            # interval over |baseline mean|, or in the unit itself on the absolute scale)
            unit = 1.0 if c.scale == "absolute" else abs(c.baseline_location)
            out.append(
                Mover(
                    phase,
                    cell,
                    candidate,
                    f,
                    kind,
                    c.baseline_location,
                    c.candidate_location,
                    c.estimate * unit,
                    c.low * unit,
                    c.high * unit,
                    c.p_value,
                    bool(c.p_value <= 1 - confidence),
                    len(xa),
                    len(xb),
                )
            )
    return out


def _functions(tables: Iterable[dict[str, float]]) -> list[str]:
    seen: dict[str, float] = {}
    for t in tables:
        for f, share in t.items():
            seen[f] = max(seen.get(f, 0.0), share)
    return sorted(f for f, top in seen.items() if top >= MIN_SHARE)


def _ranked(movers: list[Mover]) -> list[Mover]:
    """Significant first, then by |change|; one entry per function (its larger kind)."""
    best: dict[str, Mover] = {}
    for m in sorted(movers, key=lambda m: (not m.significant, -abs(m.change), m.kind)):
        best.setdefault(m.function, m)
    return list(best.values())


def profile_movers(store: Database, eid: int, baseline: str, confidence: float) -> list[Mover]:
    """The experiment's top movers (`top_movers` of its stored profiles); [] without any."""
    profiles = read_profiles(store, eid)
    return top_movers(profiles, baseline, confidence) if profiles else []
