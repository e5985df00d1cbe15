"""Choosing N cores to pin work to — the router performance-index experiment's rule: all of
the same type (no mix of performance and efficiency cores), never two SMT threads of one
core, and cores that do not share an L2 cache where the machine allows it.

Pure: works on a `Topology` value, whatever produced it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from perflab.errors import InputError, PerflabError
from perflab.platform.topology import LogicalCpu, Topology

#: Max frequencies within this ratio of the fastest of their group are one core type
#: (Turbo Boost Max "favoured" cores differ by a few percent and are the same type).
FREQ_SAME_TYPE_RATIO = 0.9


@dataclass(frozen=True)
class CoreChoice:
    """The logical CPUs to pin to (one thread per physical core), and why.

    core_type:       human description of the chosen type ("P-core", "max 2.4 GHz", …).
    shared_l2_pairs: chosen CPU pairs that share an L2 cache (empty when avoidable).
    notes:           compromises made, each a sentence.
    """

    cpus: tuple[int, ...]
    core_type: str
    shared_l2_pairs: tuple[tuple[int, int], ...]
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "cpus": list(self.cpus),
            "core_type": self.core_type,
            "shared_l2_pairs": [list(p) for p in self.shared_l2_pairs],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class _Core:
    thread: LogicalCpu  # the thread we would pin to (lowest usable thread of the core)
    type_key: tuple[str, int, int, int]  # (kind, rank of kind, -capacity, frequency class)
    type_name: str


def pick_cores(
    n: int,
    topology: Topology,
    *,
    core_type: str | None = None,
    exclude: set[int] | frozenset[int] = frozenset(),
) -> CoreChoice:
    """N logical CPUs on N distinct physical cores of one type, spread over L2 caches.

    core_type: restrict to "P" or "E" cores (hybrid CPUs); default: the fastest type
               that has N cores.
    exclude:   logical CPUs not to use (e.g. where a load generator runs); their whole
               physical core is left out, as its sibling would share it.
    Raises InputError for a bad N and PerflabError when no type has N usable cores.
    """
    if not isinstance(n, int) or n < 1:
        raise InputError(f"number of cores must be a positive integer, not {n!r}")
    cores = _physical_cores(topology, frozenset(exclude))
    groups: dict[tuple[str, int, int, int], list[_Core]] = defaultdict(list)
    for c in cores:
        groups[c.type_key].append(c)
    if core_type is not None:
        want = core_type.upper()
        groups = {k: v for k, v in groups.items() if k[0] == want}
        if not groups:
            raise PerflabError(f"no usable {want}-cores on this machine ({_describe(cores)})")
    # Fastest type first: P before E, then capacity, then frequency class.
    ordered = sorted(groups.items(), key=lambda kv: kv[0][1:])
    for key, members in ordered:
        if len(members) >= n:
            return _spread(
                n,
                members,
                members[0].type_name,
                fallback=key != ordered[0][0] and core_type is None,
                fastest=ordered[0][1][0].type_name,
            )
    raise PerflabError(
        f"cannot pick {n} cores of one type without SMT siblings: {_describe(cores)}",
        hint="ask for fewer cores" if cores else "no CPU is usable by this process",
    )


def _physical_cores(topo: Topology, exclude: frozenset[int]) -> list[_Core]:
    usable = list(topo.usable())
    by_core: dict[frozenset[int], list[LogicalCpu]] = defaultdict(list)
    for c in usable:
        by_core[c.core].append(c)
    reps = [
        min(threads, key=lambda c: c.cpu)
        for core, threads in by_core.items()
        if not (core & exclude)
    ]
    reps = [r for r in reps if r.cpu not in exclude]
    freq_class = _freq_classes({r.max_freq_khz for r in reps if r.max_freq_khz})
    class_top: dict[int, int] = {}
    for f, cls in freq_class.items():
        class_top[cls] = max(class_top.get(cls, 0), f)
    hybrid = any(r.core_type for r in reps)
    caps = {r.capacity for r in reps if r.capacity}
    out = []
    for r in reps:
        kind = r.core_type or ("?" if hybrid else "")
        rank_kind = {"P": 0, "E": 1}.get(kind, 2)
        cap = r.capacity or 0
        fcls = freq_class.get(r.max_freq_khz, 0) if r.max_freq_khz else 0
        name = []
        if kind and kind != "?":
            name.append(f"{kind}-core")
        if len(caps) > 1:
            name.append(f"capacity {cap}")
        if r.max_freq_khz:
            name.append(f"max {class_top[fcls] / 1e6:.2f} GHz")
        out.append(_Core(r, (kind, rank_kind, -cap, fcls), ", ".join(name) or "uniform cores"))
    return sorted(out, key=lambda c: c.thread.cpu)


def _freq_classes(freqs: set[int]) -> dict[int, int]:
    """Max frequency (kHz) → class 0 (fastest), 1, … grouping near-equal frequencies."""
    classes: dict[int, int] = {}
    cls, top = -1, None
    for f in sorted(freqs, reverse=True):
        if top is None or f < top * FREQ_SAME_TYPE_RATIO:
            cls, top = cls + 1, f
        classes[f] = cls
    return classes


def _spread(
    n: int, members: list[_Core], type_name: str, *, fallback: bool, fastest: str
) -> CoreChoice:
    notes: list[str] = []
    if fallback:
        notes.append(f"too few of the fastest cores ({fastest}) for {n}: using {type_name} cores")
    # Stay on one package when one has enough cores (a router's cores share a socket);
    # among those, the one with the most L2 domains, then the lowest-numbered.
    by_pkg: dict[int, list[_Core]] = defaultdict(list)
    for c in members:
        by_pkg[c.thread.package].append(c)
    fits = [p for p, cs in by_pkg.items() if len(cs) >= n]
    if fits:
        pkg = min(fits, key=lambda p: (-len(_domains(by_pkg[p])), p))
        pool = by_pkg[pkg]
    else:
        pool = members
        notes.append(
            f"no single package has {n} such cores: the choice spans {len(by_pkg)} packages"
        )
    domains = _domains(pool)
    if any(c.thread.l2 is None for c in pool):
        notes.append("L2 sharing is unknown on this machine (no cache info in sysfs)")
    # Round-robin over L2 domains; CPU 0 (interrupts, housekeeping) last everywhere.
    ordered_domains = sorted(
        domains.values(),
        key=lambda cs: (any(c.thread.cpu == 0 for c in cs), min(c.thread.cpu for c in cs)),
    )
    queues = [sorted(cs, key=lambda c: (c.thread.cpu == 0, c.thread.cpu)) for cs in ordered_domains]
    chosen: list[_Core] = []
    while len(chosen) < n:
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    cpus = tuple(sorted(c.thread.cpu for c in chosen))
    pairs = tuple(
        (a.thread.cpu, b.thread.cpu)
        if a.thread.cpu < b.thread.cpu
        else (b.thread.cpu, a.thread.cpu)
        for a, b in combinations(chosen, 2)
        if a.thread.l2 is not None and b.thread.cpu in a.thread.l2
    )
    if pairs:
        notes.append(
            f"only {len(domains)} L2 domain(s) for {n} cores: "
            + ", ".join(f"{a}+{b}" for a, b in sorted(pairs))
            + " share an L2 cache"
        )
    if 0 in cpus:
        notes.append("CPU 0 is used (it usually also serves interrupts and housekeeping)")
    return CoreChoice(cpus, type_name, tuple(sorted(pairs)), tuple(notes))


def _domains(cores: list[_Core]) -> dict[frozenset[int], list[_Core]]:
    out: dict[frozenset[int], list[_Core]] = defaultdict(list)
    for c in cores:
        out[c.thread.l2 if c.thread.l2 is not None else frozenset({c.thread.cpu})].append(c)
    return out


def _describe(cores: list[_Core]) -> str:
    if not cores:
        return "no usable cores"
    groups: dict[str, list[int]] = defaultdict(list)
    for c in cores:
        groups[c.type_name].append(c.thread.cpu)
    return "; ".join(
        f"{len(v)} physical core(s) of type {k} (cpus {','.join(map(str, sorted(v)))})"
        for k, v in groups.items()
    )
