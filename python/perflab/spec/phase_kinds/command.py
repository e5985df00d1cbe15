"""A command phase: ``command = "..."``, a shell command run on the phase's host (``on``),
measured by the harness (wall, CPU, max RSS), its output read by a named ``parser``, its
perf ``counters`` counted around it, the files it leaves ``fetch``ed. Its execution:
`perflab.execution.phase_kinds.command`."""

from __future__ import annotations

from collections.abc import Hashable, Set
from typing import TYPE_CHECKING, cast

from perflab.spec.metric_names import NameSet, parser_names
from perflab.spec.phase_kinds.base import PhaseKind, check_parser
from perflab.spec.types import Command

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.schema import PhaseSpec


class CommandKind(PhaseKind):
    key = "command"
    schema = Command  # `{param}` substituted shell-quoted
    runner = "perflab.execution.phase_kinds.command"
    runs_command = True

    def check(self, spec: Spec, i: int, phase: PhaseSpec) -> None:
        if phase.parser is not None:
            check_parser(spec, ("phase", i, "parser"), phase.parser)

    def has_names(self, phase: PhaseSpec) -> bool:
        return phase.parser is not None  # else only the harness's own, and json/regex

    def metric_names(self, phase: PhaseSpec, modes: Set[Hashable]) -> NameSet | None:
        return None if phase.parser is None else parser_names(phase.parser)

    def source(self, phase: PhaseSpec, names: NameSet) -> str:
        return f"phase '{phase.name}' ({names.what})"

    def commands(self, phase: PhaseSpec) -> list[str]:
        return [command(phase)]


def command(phase: PhaseSpec) -> str:
    """A command phase's command (its template: ``{param}`` not yet substituted)."""
    return cast(str, phase.kind_value)


KIND = CommandKind()
