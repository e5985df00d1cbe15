"""What a kind of phase is at the spec layer (`PhaseKind`): its key and the type of its value
(its part of the schema), its rules, what the phase's common keys mean for it, and the
metric names it reports. Its execution and profiling are its runner's (``runner``, at the
run layer: `perflab.execution.phase_kinds`)."""

from __future__ import annotations

from collections.abc import Hashable, Set
from typing import TYPE_CHECKING, Any

from perflab.spec.name_rules import choices_hint

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath
    from perflab.spec.metric_names import NameSet
    from perflab.spec.schema import PhaseSpec


class PhaseKind:
    """One kind of phase. A kind is a subclass that sets `key`, `schema` and `runner` and
    overrides what differs from these defaults (a phase that runs elsewhere than in a shell,
    reports named metrics of its own, takes no ``parser``), then registers an instance
    (`perflab.spec.phase_kinds.register`)."""

    #: its key in a [[phase]] table, and its name in messages ("kv phase 'load'")
    key: str = ""
    #: the type of that key's value (pydantic validates it where the phase is written)
    schema: Any = None
    #: its execution and profiling (`perflab.execution.phase_kinds.PhaseRunner`): the dotted name
    #: of a module of the run layer that defines ``RUNNER`` (the spec layer imports nothing
    #: above it), or the runner itself
    runner: object = None
    #: a shell command of the phase's host: the phase's ``counters``, ``fetch``, overhead
    #: commands and the harness's own metrics (``wall_time``, …) are for it
    runs_command: bool = False
    #: its work comes from one process on each host of a list (``on = [...]``, ``processes``)
    spreads_over_hosts: bool = False
    #: it runs inside perflab, on this machine (``on`` another host is an error)
    here_only: bool = False
    #: its value is checked as every cell and variant renders it (`check_rendered`)
    renders: bool = False

    def check(self, spec: Spec, i: int, phase: PhaseSpec) -> None:
        """Its own rules for phase ``i``, checked with the phases (before the metrics)."""
        if phase.parser is not None:
            raise spec.error(
                ("phase", i, "parser"), f"a {self.key} phase has its own metrics; remove 'parser'"
            )

    def check_rendered(
        self, spec: Spec, i: int, phase: PhaseSpec, values: dict[str, Any]
    ) -> Hashable:
        """(``renders``) Phase ``i`` as ``values`` (one cell and variant) renders it, checked;
        returns what decides the names it reports there (`metric_names`' ``modes``)."""
        return None

    def has_names(self, phase: PhaseSpec) -> bool:
        """Whether it reports named metrics: a metric may then name none of its sources, or
        take a ``field``."""
        return True

    def metric_names(self, phase: PhaseSpec, modes: Set[Hashable]) -> NameSet | None:
        """The names it reports (``modes``: what `check_rendered` returned for it in every
        cell and variant); None when they are known only once it runs."""
        return None

    def source(self, phase: PhaseSpec, names: NameSet) -> str:
        """The phase, as a message names the source of a metric."""
        return f"{self.key} phase '{phase.name}'"

    def absence_reason(self, name: str) -> str | None:
        """Why ``name``, a metric this kind can report, is not reported by this phase's
        settings (None: it is not one of those)."""
        return None

    def commands(self, phase: PhaseSpec) -> list[str]:
        """The shell command templates it runs on its host (their ``{names}`` are checked, the
        tools they run recorded with the host's environment)."""
        return []


def check_parser(spec: Spec, loc: KeyPath, name: str) -> None:
    """A phase's ``parser`` is a registered output parser."""
    from perflab.workloads.parsers import available_parsers

    known = available_parsers()
    if name not in known:
        raise spec.error(loc, f"unknown parser '{name}'", hint=choices_hint(name, known))
