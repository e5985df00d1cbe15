"""Rules for [[phase]]: each has exactly one kind (``command``, ``kv``, ``probe``, …: the
registered kinds, `perflab.spec.phase_kinds`) and keeps that kind's rules, checked as
written and — for a kind whose value is a template of a whole table (a kv load) — as every
cell and variant renders it."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from perflab.spec.matrix import expand_matrix
from perflab.spec.param_names import BUILTIN_PARAMS, pool_params, service_ports
from perflab.spec.phase_kinds import choice, kind_of

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec


def check_phases(spec: Spec) -> None:
    """Each phase is one kind, with the options that kind takes (its own rules)."""
    for i, p in enumerate(spec.model.phase):
        if len(p.kind_keys) != 1:
            raise spec.error(("phase", i), f"phase '{p.name}' needs exactly one of {choice()}")
        kind_of(p).check(spec, i, p)


def check_rendered(spec: Spec) -> dict[int, set[Hashable]]:
    """Every phase of a kind that `renders`, checked as each cell and variant renders it;
    returns, per such phase, what its renderings said about the metrics it reports (its
    kind's `metric_names` reads them)."""
    m = spec.model
    phases = [(i, p, kind_of(p)) for i, p in enumerate(m.phase) if kind_of(p).renders]
    modes: dict[int, set[Hashable]] = {i: set() for i, _, _ in phases}
    if not phases:
        return modes
    for cell in expand_matrix(m.matrix):
        for v in m.variant:
            values = {
                **dict.fromkeys(BUILTIN_PARAMS, 0),
                **dict.fromkeys(pool_params(m), 0),
                **dict.fromkeys(service_ports(m), 1),
                **m.params,
                **cell.values,
                **v.params,
            }
            for i, p, kind in phases:
                modes[i].add(kind.check_rendered(spec, i, p, values))
    return modes
