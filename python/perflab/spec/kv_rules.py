"""Rules for kv phases: each table, as every cell and variant renders it, is a valid
load-generator configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from perflab.spec.matrix import expand_matrix
from perflab.spec.param_names import BUILTIN_PARAMS, service_ports
from perflab.spec.template import placeholders, render_value

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath
    from perflab.workloads.kv_config import KvConfig


def check_kv(spec: Spec) -> dict[int, set[tuple[bool, bool]]]:
    """Validate every kv table as each cell and variant renders it; returns, per kv phase,
    the (open loop, sends GETs) modes it runs in — what decides the metrics it reports."""
    m = spec.model
    kv_phases = [(i, p) for i, p in enumerate(m.phase) if p.kv is not None]
    modes: dict[int, set[tuple[bool, bool]]] = {i: set() for i, _ in kv_phases}
    if not kv_phases:
        return modes
    for cell in expand_matrix(m.matrix):
        for v in m.variant:
            values = {
                **dict.fromkeys(BUILTIN_PARAMS, 0),
                **dict.fromkeys(service_ports(m), 1),
                **m.params,
                **cell.values,
                **v.params,
            }
            for i, p in kv_phases:
                for name in _kv_placeholders(p.kv):
                    if name not in values:
                        raise spec.error(("phase", i, "kv"), f"unknown parameter '{{{name}}}'")
                table = render_value(p.kv, values)
                config = _kv_config(spec, ("phase", i, "kv"), table)
                modes[i].add((config.rate is not None, int(config.ratio.split(":")[1]) > 0))
    return modes


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


def _kv_placeholders(value: Any) -> list[str]:
    if isinstance(value, str):
        return placeholders(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _kv_placeholders(v)]
    if isinstance(value, list):
        return [n for v in value for n in _kv_placeholders(v)]
    return []
