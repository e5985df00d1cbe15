"""A kv phase: ``[phase.kv]``, the built-in key-value load generator (memtier's options,
`perflab.workloads.kv_config`), in perflab's process or from one load process on each host
of ``on`` (``processes`` each). Its table is checked as every cell and variant renders it;
what it reports depends on it (an open-loop load, a load that sends GETs). Its execution:
`perflab.execution.phase_kinds.kv`."""

from __future__ import annotations

from collections.abc import Hashable, Set
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from perflab.spec.metric_names import NameSet, kv_absence_reason, kv_names
from perflab.spec.phase_kinds.base import PhaseKind, check_parser
from perflab.spec.template import placeholders, render_value

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath
    from perflab.spec.schema import PhaseSpec
    from perflab.workloads.kv_config import KvConfig


class KvKind(PhaseKind):
    key = "kv"
    schema = dict[str, Any]  # memtier's options (docs/load.md)
    runner = "perflab.execution.phase_kinds.kv"
    spreads_over_hosts = True
    renders = True

    def check(self, spec: Spec, i: int, phase: PhaseSpec) -> None:
        if phase.parser is not None:
            check_parser(spec, ("phase", i, "parser"), phase.parser)
        if phase.cores is not None:
            raise spec.error(
                ("phase", i, "cores"),
                "cores applies to command and probe phases, not kv "
                "(the load generator's threads are its own: use threads = N)",
            )
        super().check(spec, i, phase)  # no parser: its metrics are its own

    def check_rendered(
        self, spec: Spec, i: int, phase: PhaseSpec, values: dict[str, Any]
    ) -> Hashable:
        """The table as ``values`` renders it is a valid load configuration; returns (open
        loop, sends GETs): what decides the metrics it reports."""
        loc = ("phase", i, "kv")
        for name in _placeholders(table(phase)):
            if name not in values:
                raise spec.error(loc, f"unknown parameter '{{{name}}}'")
        config = _kv_config(spec, loc, render_value(table(phase), values))
        return config.rate is not None, int(config.ratio.split(":")[1]) > 0

    def metric_names(self, phase: PhaseSpec, modes: Set[Hashable]) -> NameSet | None:
        return kv_names(f"kv phase '{phase.name}'", cast(Set[tuple[bool, bool]], modes))

    def absence_reason(self, name: str) -> str | None:
        return kv_absence_reason(name)


def table(phase: PhaseSpec) -> dict[str, Any]:
    """A kv phase's table (its templates not yet rendered)."""
    return cast(dict[str, Any], phase.kind_value)


def _kv_config(spec: Spec, loc: KeyPath, table: dict[str, Any]) -> KvConfig:
    """The kv table as the load generator's settings, or its first error at file:line."""
    from perflab.workloads.kv_config import KvConfig, validation_messages

    try:
        return KvConfig.model_validate(table)
    except ValidationError as e:
        path, message = validation_messages(e)[0]
        parts = tuple(int(p) if p.isdigit() else p for p in path.split(".")) if path else ()
        raise spec.error(
            loc + parts, f"kv {path}: {message}" if path else f"kv: {message}"
        ) from None


def _placeholders(value: Any) -> list[str]:
    if isinstance(value, str):
        return placeholders(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _placeholders(v)]
    if isinstance(value, list):
        return [n for v in value for n in _placeholders(v)]
    return []


KIND = KvKind()
