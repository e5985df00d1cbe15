"""Rules for [[metric]]: one source each, a measured phase, overheads, and names the
phase reports."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import TYPE_CHECKING

from perflab.spec.metric_names import NameSet
from perflab.spec.name_rules import choices_hint
from perflab.spec.phase_kinds import kind_of
from perflab.spec.schema import HARNESS_METRICS, regex_value_group
from perflab.spec.suffixes import OVERHEAD_SUFFIXES

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.schema import MetricSpec, PhaseSpec


def check_metric(spec: Spec, i: int, x: MetricSpec, measured: list[PhaseSpec]) -> None:
    loc = ("metric", i)
    sources = [
        k
        for k in ("harness", "json_path", "regex", "counter", "monitor")
        if getattr(x, k) is not None
    ]
    if x.field is not None:
        sources.append("field")
    if len(sources) > 1:
        names = ", ".join("json" if s == "json_path" else s for s in sources)
        raise spec.error(loc, f"metric '{x.name}' has several sources ({names}); keep one")
    if x.phase is not None:
        phase = next((p for p in spec.model.phase if p.name == x.phase), None)
        if phase is None:
            raise spec.error(
                loc + ("phase",),
                f"metric '{x.name}' names unknown phase '{x.phase}'",
                hint=choices_hint(x.phase, [p.name for p in spec.model.phase]),
            )
        if not phase.measure:
            raise spec.error(
                loc + ("phase",), f"phase '{x.phase}' is not measured (measure = false)"
            )
    else:
        phase = next(p for p in measured if p.name == spec.model.metric_phase(x))
    if x.regex is not None:
        try:
            regex_value_group(x.regex)
        except re.error as e:
            raise spec.error(loc + ("regex",), f"bad regex: {e}") from None
        except ValueError as e:
            raise spec.error(loc + ("regex",), str(e)) from None
    # Implicit source: the phase's named metrics (its parser's, a kv load's, …) by name, else
    # a harness metric by name.
    named = kind_of(phase).has_names(phase)
    if not sources and not named and x.name not in HARNESS_METRICS:
        raise spec.error(
            loc,
            f"metric '{x.name}' has no source",
            hint='add harness = "wall_time", json = "path", regex = "...", or a parser on the phase',
        )
    if x.field is not None and not named:
        raise spec.error(
            loc + ("field",),
            f"metric '{x.name}' uses 'field' but phase '{phase.name}' has no parser",
        )
    _check_overhead(spec, i, x, phase)


def _check_overhead(spec: Spec, i: int, x: MetricSpec, phase: PhaseSpec) -> None:
    loc = ("metric", i)
    if x.overhead is not None and x.overhead_phase is not None:
        raise spec.error(
            loc + ("overhead_phase",),
            f"metric '{x.name}' has both 'overhead' and 'overhead_phase'; keep one",
        )
    if x.overhead is not None:
        kind = kind_of(phase)
        if not kind.runs_command:
            raise spec.error(
                loc + ("overhead",),
                f"an overhead command needs a command phase; '{phase.name}' is a {kind.key} phase",
            )
        if not x.overhead.strip():
            raise spec.error(
                loc + ("overhead",),
                "the overhead command is empty",
                hint='to subtract the shell\'s start-up, use overhead = "true"',
            )
    if x.overhead_phase is not None:
        other = next((p for p in spec.model.phase if p.name == x.overhead_phase), None)
        if other is None:
            raise spec.error(
                loc + ("overhead_phase",),
                f"metric '{x.name}' names unknown phase '{x.overhead_phase}'",
                hint=choices_hint(x.overhead_phase, [p.name for p in spec.model.phase]),
            )
        if other is phase:
            raise spec.error(
                loc + ("overhead_phase",),
                f"the overhead phase must differ from the metric's own phase '{phase.name}'",
            )
        if not other.measure:
            raise spec.error(
                loc + ("overhead_phase",),
                f"phase '{other.name}' is not measured "
                "(measure = false), so nothing can be taken from it",
            )
    if x.overhead is not None or x.overhead_phase is not None:
        names = {m.name for m in spec.model.metric}
        for suffix in OVERHEAD_SUFFIXES:
            if x.name + suffix in names:
                raise spec.error(
                    loc + ("name",),
                    f"metric '{x.name}{suffix}' collides with the "
                    f"{suffix[1:]} value perflab records for '{x.name}'; rename it",
                )


def check_metric_names(spec: Spec, modes: dict[int, set[Hashable]]) -> None:
    """A metric taken by name from a kv, probe or parser phase names something that phase
    reports (checked now, with a suggestion, rather than failing every run). ``modes``:
    what each phase's renderings said (`perflab.spec.phase_rules.check_rendered`)."""
    m = spec.model
    index = {p.name: i for i, p in enumerate(m.phase)}
    known: dict[int, NameSet | None] = {}
    for mi, x in enumerate(m.metric):
        if any(
            getattr(x, k) is not None
            for k in ("harness", "json_path", "regex", "counter", "monitor")
        ):
            continue
        pi = index[m.metric_phase(x)]
        phase = m.phase[pi]
        kind = kind_of(phase)
        if pi not in known:
            known[pi] = kind.metric_names(phase, modes.get(pi, set()))
        names = known[pi]
        if names is None:
            continue
        key = x.field or x.name
        loc = ("metric", mi, "field" if x.field is not None else "name")
        if names.matches(key) or (x.field is None and kind.runs_command and key in HARNESS_METRICS):
            continue
        close = names.suggestion(key)
        if not names.closed and close is None:
            continue  # an open set (memtier's table): perhaps a column perflab does not know
        source = kind.source(phase, names)
        message = (
            f"metric '{x.name}': {source} reports no field '{key}'"
            if x.field is not None
            else f"{source} reports no metric '{key}'"
        )
        reason = kind.absence_reason(key)
        hint = f"did you mean '{close}'?" if close else reason or f"it reports {names.listing()}"
        raise spec.error(loc, message, hint=hint)
