"""Which metric names a phase can yield — its kv load, probe or output parser — so that a
metric taken from it by name is checked when the spec loads, not when its first run fails.

A `NameSet` answers "could this phase report NAME?" from static knowledge: the kv result's
`kv_metric_names`, a parser's documented `MetricDoc` names (templates such as
``p<N>_latency_ms`` or ``<type>_<metric>`` become patterns), a probe's naming scheme.
A *closed* set is complete: any other name is an error. An open one (memtier's table,
whose unknown columns become metrics too) only rejects a name close to a known one: a typo.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: Parsers whose names are not all known in advance (memtier's text table turns any column
#: it does not know into a metric): only near-misses of known names are reported there.
OPEN_PARSERS = frozenset({"memtier", "memtier_text"})

_PERCENTILE_EXAMPLES = ("50", "90", "99", "999", "9999")
_TYPE_EXAMPLES = ("sets", "gets")


@dataclass(frozen=True)
class NameSet:
    """Names a phase yields: exact ``names``, regex ``patterns``, ``examples`` to suggest from."""

    what: str  # "kv phase 'access'", "parser 'hyperfine'", …
    names: frozenset[str] = frozenset()
    patterns: tuple[re.Pattern[str], ...] = ()
    closed: bool = True
    examples: tuple[str, ...] = field(default=())
    bases: tuple[str, ...] = ()  # names a prefix may go before (``fast_`` + ``mean_s``)

    def matches(self, name: str) -> bool:
        return name in self.names or any(p.fullmatch(name) for p in self.patterns)

    def suggestion(self, name: str) -> str | None:
        """The closest known name: a typo of a whole name, or of the part after a prefix."""
        pool = sorted(set(self.examples) | self.names)
        close = difflib.get_close_matches(name, pool, n=1, cutoff=0.75)
        if close:
            return close[0]
        for i, ch in enumerate(name):
            if ch == "_" and i + 1 < len(name):
                close = difflib.get_close_matches(name[i + 1 :], self.bases, n=1, cutoff=0.75)
                if close:
                    return name[: i + 1] + close[0]
        return None

    def listing(self, limit: int = 8) -> str:
        shown = sorted(self.names)[:limit] or list(self.examples[:limit])
        more = len(self.names) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def kv_names(what: str, modes: Iterable[tuple[bool, bool]]) -> NameSet:
    """Names every (open_loop, gets) mode the phase runs in reports (all cells, all variants)."""
    from perflab.workloads.kv_result import kv_metric_names

    sets = [kv_metric_names(open_loop=o, gets=g) for o, g in set(modes)]
    names = frozenset.intersection(*sets) if sets else frozenset()
    return NameSet(what, names, examples=tuple(sorted(names)))


def kv_absence_reason(name: str) -> str | None:
    """Why a kv metric that exists is not reported by this phase, if it is one of those."""
    from perflab.workloads.kv_result import GET_METRICS, OPEN_LOOP_METRICS

    if name in OPEN_LOOP_METRICS:
        return "only an open-loop load reports it: give the kv table a rate (in every cell)"
    if name in GET_METRICS:
        return "only a load that sends GETs reports it, and ratio N:0 sends none"
    return None


def parser_names(parser: str) -> NameSet:
    """Names a registered parser documents (`Parser.metrics`), templates as patterns."""
    from perflab.workloads.parsers import get_parser

    docs = [d.name for d in get_parser(parser).metrics]
    plain = [n for n in docs if "<" not in n]
    unprefixed = [n for n in docs if "<" in n and not _prefixed(n)]
    prefixed = [n for n in docs if _prefixed(n)]
    base_rx = (
        "(?:"
        + "|".join([re.escape(n) for n in plain] + [_template(t, None) for t in unprefixed])
        + ")"
    )
    patterns = tuple(re.compile(_template(t, base_rx)) for t in unprefixed + prefixed)
    bases = plain + [t.replace("<N>", p) for t in unprefixed for p in _PERCENTILE_EXAMPLES]
    examples = list(bases)
    if any(t.startswith("<type>") for t in prefixed):
        examples += [f"{p}_{b}" for p in _TYPE_EXAMPLES for b in bases]
    return NameSet(
        f"parser '{parser}'",
        frozenset(plain),
        patterns,
        closed=parser not in OPEN_PARSERS,
        examples=tuple(examples),
        bases=tuple(bases),
    )


def _prefixed(template: str) -> bool:
    """``<type>_<metric>``: any of the other names after a prefix."""
    return template.startswith("<") and template.endswith("<metric>")


def _template(template: str, base_rx: str | None) -> str:
    out = ""
    for part in re.split(r"(<[^>]+>)", template):
        if part == "<metric>":
            out += base_rx or "[a-z0-9_]+"
        elif part == "<N>":
            out += r"\d+"
        elif part.startswith("<") and part.endswith(">"):
            out += "[a-z0-9_]+?"
        else:
            out += re.escape(part)
    return out


def probe_names(table: dict[str, Any]) -> NameSet | None:
    """Names a probe phase reports (see `perflab.workloads.probes`), None when its options
    are templated in a way that decides them at run time."""
    name = table.get("name")
    what = f"probe '{name}'"
    if name == "cpu":
        if "coremark" in table:
            return NameSet(what, frozenset({"coremark_per_core"}))
        return NameSet(what, frozenset({"cpu_iter_per_sec"}))
    if name == "memmove":
        cases = table.get("case", table.get("cases"))
        if isinstance(cases, str):
            cases = [cases]
        patterns = []
        if (
            isinstance(cases, list)
            and all(isinstance(c, str) and "{" not in c for c in cases)
            and cases
        ):
            names = {f"memmove_{c}_mib_per_sec" for c in cases}
            if "small_tlbmiss" in cases:
                names.add("memmove_mib_per_sec")
        elif cases is None:
            names = {f"memmove_{c}_mib_per_sec" for c in _memmove_cases()} | {"memmove_mib_per_sec"}
        else:
            return None
        if table.get("sweep"):
            patterns.append(re.compile(r"memmove_sweep_\d+b_\d+buf_mib_per_sec"))
        return NameSet(what, frozenset(names), tuple(patterns), examples=tuple(sorted(names)))
    if name == "latency":
        return NameSet(
            what,
            frozenset(),
            (re.compile(r"latency_(?:page|random)_\d+[kmgb]_ns"),),
            examples=tuple(
                f"latency_{o}_{s}_ns" for o in ("page", "random") for s in ("4k", "1m", "1g")
            ),
        )
    return None


def _memmove_cases() -> list[str]:
    """mmbm's case names (the native module's list; the documented five without it)."""
    try:
        from perflab.workloads.probes import memmove_cases

        return list(memmove_cases())
    except Exception:
        return [
            "small_no_miss",
            "small_tlbmiss",
            "large_no_miss",
            "large_cachemiss",
            "large_allmiss",
        ]
