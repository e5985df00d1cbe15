"""Key-value load from the command line (`perflab load`, memtier_benchmark's options):
a load described by its flags, checked, run by the native engine, and its result —
or the part that ran, when interrupted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.workloads.kv import KvConfig, KvProgress
    from perflab.workloads.kv_result import KvResult


class LoadRun(NamedTuple):
    """A load's result, and whether an interrupt cut it short (the part that ran)."""

    result: KvResult
    interrupted: bool


def load_config(values: Mapping[str, Any], flags: Mapping[str, str]) -> KvConfig:
    """The load ``values`` describe (None: the default); a bad value is a one-line
    InputError naming its flag (``flags``: field → flag)."""
    from pydantic import ValidationError

    from perflab.workloads.kv import KvConfig
    from perflab.workloads.kv_config import validation_messages

    try:
        return KvConfig(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as e:
        field, message = validation_messages(e)[0]
        raise InputError(f"{flags.get(field, field)}: {message}") from None


def run_load(
    config: KvConfig,
    flags: Mapping[str, str],
    *,
    progress: Callable[[KvProgress], None] | None,
    interval: float,
) -> LoadRun:
    """The result, and whether it was interrupted: an interrupt keeps the part that ran,
    when there is one (else it propagates)."""
    from perflab.workloads.kv import KvConfigError, run_kv

    try:
        return LoadRun(run_kv(config, progress=progress, progress_interval=interval), False)
    except KvConfigError as e:
        raise InputError(f"{flags.get(e.field, e.field)}: {e.reason}") from None
    except KeyboardInterrupt as e:
        partial: KvResult | None = getattr(e, "partial_result", None)
        if partial is None:
            raise
        return LoadRun(partial, True)
