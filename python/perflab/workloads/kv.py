"""Key-value load from Python: describe it (`KvConfig`), run it (`run_kv`), read it (`KvResult`).

    from perflab.workloads.kv import KvConfig, run_kv
    cfg = KvConfig(server="127.0.0.1:11211", protocol="memcache_binary", test_time="10s",
                   ratio="0:1", key_pattern="G:G", pipeline=8)
    result = run_kv(cfg)
    print(result.format_table())
    result.metrics()["p99_latency_ms"]

The engine is Rust (crate ``perflab-load``); it runs with the GIL released. A run that
hits a fault (server unreachable, closing connections, answering garbage or going
silent) still returns: ``result.status == "failed"``, ``result.error`` says why, and the
metrics cover what completed before. Requests the server refuses (SERVER_ERROR, -OOM, a
binary error status) do not stop the run; they are counted by kind in ``result.errors``,
and ``result.ok`` is false when any request failed. Only a bad configuration raises
(`InputError`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from perflab.errors import InputError
from perflab.workloads.kv_config import ENGINE_FIELDS, KvConfig, validation_messages
from perflab.workloads.kv_latency import LatencyDistribution
from perflab.workloads.kv_result import (
    METRICS,
    KvErrors,
    KvResult,
    KvResultError,
    KvWarning,
    merge_histograms,
)

__all__ = [
    "METRICS",
    "KvConfig",
    "KvConfigError",
    "KvErrors",
    "KvProgress",
    "KvResult",
    "KvResultError",
    "KvWarning",
    "LatencyDistribution",
    "as_config",
    "merge_histograms",
    "run_kv",
]

#: How often the engine calls back into Python (stop requests and signals are seen this fast).
TICK_S = 0.1


class KvConfigError(InputError):
    """A kv configuration the engine cannot run; ``field`` names the KvConfig field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"kv {field}: {message}" if field else f"kv: {message}")
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class KvProgress:
    """A progress snapshot, handed to ``run_kv(progress=...)``."""

    phase: str  # "connecting", "warmup", "measuring", "finishing"
    elapsed_s: float  # since the start (0 while connecting)
    planned_s: float | None  # warmup + test_time, for time-limited runs
    requests_done: int  # replies so far, warmup included
    requests_planned: int | None  # measured requests the run sends, for count-limited runs
    ops_per_sec: float  # over about the last second
    ops_per_sec_avg: float  # since the start
    errors: int  # failed requests so far (error replies and lost), warmup included
    connections: int
    connections_planned: int

    @property
    def fraction(self) -> float | None:
        """Share of the run done, in [0, 1], when it can be known."""
        if self.planned_s:
            return min(1.0, self.elapsed_s / self.planned_s)
        if self.requests_planned:
            return min(1.0, self.requests_done / self.requests_planned)
        return None

    @property
    def remaining_s(self) -> float | None:
        if self.planned_s:
            return max(0.0, self.planned_s - self.elapsed_s)
        if self.requests_planned and self.ops_per_sec_avg > 0:
            return max(0.0, (self.requests_planned - self.requests_done) / self.ops_per_sec_avg)
        return None


def as_config(config: KvConfig | dict[str, Any]) -> KvConfig:
    """A KvConfig from itself or from a ``kv = {...}`` table; InputError naming the field otherwise."""
    if isinstance(config, KvConfig):
        return config
    try:
        return KvConfig.model_validate(config)
    except ValidationError as e:
        raise KvConfigError(*validation_messages(e)[0]) from None


def run_kv(
    config: KvConfig | dict[str, Any],
    *,
    progress: Callable[[KvProgress], Any] | None = None,
    stop: threading.Event | None = None,
    progress_interval: float = 1.0,
) -> KvResult:
    """Run a load and return its result (also when stopped or failed part-way: see `KvResult.status`).

    ``progress`` is called about every ``progress_interval`` seconds, in the calling
    thread. Setting ``stop`` (from another thread or a signal handler) ends the run
    within ~0.1 s with ``status == "stopped"``. A KeyboardInterrupt (or an exception
    raised by ``progress``) also ends it; it is re-raised with the partial result
    attached as ``exc.partial_result``.
    """
    from perflab import _native

    cfg = as_config(config)
    last = [0.0]

    def tick(snapshot: dict[str, Any]) -> bool:
        if stop is not None and stop.is_set():
            return True
        if progress is not None:
            now = time.monotonic()
            if now - last[0] >= progress_interval:
                last[0] = now
                progress(KvProgress(**snapshot))
        return False

    try:
        text, exc = _native.kv_run(json.dumps(cfg.to_engine()), tick, TICK_S)
    except ValueError as e:  # the engine refused it: host not resolvable, too few file descriptors…
        field, message = e.args[0] if len(e.args) == 1 else e.args
        raise KvConfigError(ENGINE_FIELDS.get(field, field), message) from None
    result = KvResult(json.loads(text))
    if exc is not None:
        try:
            exc.partial_result = result  # type: ignore[attr-defined]  # see the docstring
        except AttributeError:
            pass
        raise exc
    return result
