"""A `kv = {...}` phase of an experiment: the built-in load generator as a run step.

The table is validated per cell and variant when the spec loads (errors at file:line, in
`perflab.spec.phase_kinds.kv`), run through `run_kv` with the run's timeout and Ctrl-C honoured,
and its full result — histograms included — stored with the run as the artifact
``kv:<phase>``, so that percentiles across runs can be computed from merged histograms.

A load whose requests failed (error replies such as ``SERVER_ERROR object too large for
cache`` or ``-OOM …``, or requests lost with a connection) fails the run with one line
naming the count and the most common kinds — it never yields throughput numbers.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from perflab.execution.metrics import PhaseOutput
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.spec.schema import PhaseSpec
    from perflab.workloads.kv_result import KvResult


@dataclass
class KvPhaseResult:
    output: PhaseOutput | None
    status: str = "ok"  # ok | failed | timeout | interrupted
    failure: str | None = None
    artifacts: dict[str, bytes] = field(default_factory=dict)
    #: what ran, as the run's ``commands`` artifact keeps each step (`StepOutput.record`)
    commands: list[dict[str, object]] = field(default_factory=list)


class _StopWhen:
    """Stop flag for `run_kv`: the runner's stop request, or the phase's deadline."""

    def __init__(self, stop: threading.Event | None, deadline: float | None):
        self.stop = stop
        self.deadline = deadline

    def is_set(self) -> bool:
        return bool(self.stop is not None and self.stop.is_set()) or (
            self.deadline is not None and time.monotonic() >= self.deadline
        )


def run_kv_phase(
    phase: PhaseSpec,
    table: dict[str, Any],
    *,
    timeout: float | None,
    stop: threading.Event | None,
) -> KvPhaseResult:
    from perflab.errors import InputError
    from perflab.workloads.kv import run_kv

    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        command = in_process_record(phase, table)
        # run_kv only calls is_set(); _StopWhen is that check with the deadline added.
        result = run_kv(table, stop=_StopWhen(stop, deadline))  # type: ignore[arg-type]
    except InputError as e:  # the engine refused the configuration (e.g. unresolvable host)
        return KvPhaseResult(None, "failed", e.one_line())
    return dataclasses.replace(
        kv_phase_result(phase, result, timeout=timeout, stop=stop), commands=[command]
    )


def in_process_record(phase: PhaseSpec, table: dict[str, Any]) -> dict[str, object]:
    """The ``commands`` entry of a load run in-process: the same engine as one program
    (``perflab-load CONFIG``, in perflab's ``_bin/``) with the configuration it ran, so
    that ``perflab show ID --run N`` says what load ran and how to run it again."""
    from perflab.workloads.kv import as_config

    config = json.dumps(as_config(table).to_engine(), separators=(",", ":"))
    return {
        "step": f"phase:{phase.name}",
        "host": None,
        "command": shlex.join(["perflab-load", config]),
        "env": {},
        "note": "run in-process by perflab: the same engine as this command",
    }


def kv_phase_result(
    phase: PhaseSpec,
    result: KvResult,
    *,
    timeout: float | None,
    stop: threading.Event | None,
) -> KvPhaseResult:
    """A load's result as the phase's: its artifacts, and its metrics or why it failed."""
    warnings = "\n".join(f"{w.code}: {w.message}" for w in result.warnings)
    artifacts = {
        keys.kv(phase.name): json.dumps(result.to_json()).encode(),
        keys.phase_output(
            "stdout", phase.name
        ): f"{result.format_table()}\n\n{result.format_summary()}\n".encode(),
    }
    if warnings:
        artifacts[keys.phase_output("stderr", phase.name)] = (warnings + "\n").encode()
    if result.status == "stopped":
        if stop is not None and stop.is_set():
            return KvPhaseResult(None, "interrupted", "interrupted", artifacts)
        return KvPhaseResult(None, "timeout", f"timed out after {timeout:g} s", artifacts)
    if result.status == "failed":
        return KvPhaseResult(None, "failed", result.error or "load failed", artifacts)
    errors = result.errors
    if errors.total:
        return KvPhaseResult(None, "failed", f"kv: {errors.reason()}", artifacts)
    output = PhaseOutput(
        stdout=result.format_table(), stderr=warnings, harness={}, named=result.metrics()
    )
    return KvPhaseResult(output, "ok", None, artifacts)
