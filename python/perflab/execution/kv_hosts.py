"""A kv phase whose load comes from other machines: ``on = ["client1", "client2"]`` (one load
process per host; ``processes = N`` per host), or ``on = "client1"``.

Each process is the load engine as one program, ``perflab-load`` (built with perflab and
staged to each host like ``perflab-exec``: only a POSIX shell and SSH are needed there), run
as an ordinary step of its host — its timeout, a stop request and clean-up as for any step.
They all start at one instant: each host's clock is read a few times first over one open
session (the reading with the shortest round trip gives its offset from this machine's
clock, ± half that trip), and
every process is told the common start in its own host's clock. Their results are merged by
the engine (`perflab._native.kv_merge`): counts summed, HDR histograms added, so latency
percentiles are those of every request of every process, never averaged ones. The run keeps
the merged result (``kv:PHASE``), each process's own (``kv:PHASE@HOST#I``), the clock
offsets and the common start in this machine's clock (``clocks:PHASE``: ``HOST  OFFSET ms
± UNCERTAINTY ms`` lines, then ``start  UNIX_SECONDS``) and a per-process table in the
phase's stdout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.execution.command import StepOutput, run_command
from perflab.execution.kv_phase import KvPhaseResult, kv_phase_result
from perflab.hosts.process import installed_program
from perflab.hosts.ssh import HostError
from perflab.hosts.step import TERM_GRACE_S, StepRequest, output_files
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.hosts.base import Host
    from perflab.spec.schema import PhaseSpec
    from perflab.workloads.kv_result import KvResult

#: Readings of a host's clock; the one with the shortest round trip is kept.
CLOCK_READINGS = 9
#: Seconds between the common start and the moment it is announced, beyond the slowest
#: host's round trip: time for every process to be spawned and waiting.
START_MARGIN_S = 0.5


@dataclass(frozen=True)
class ClockOffset:
    """A host's clock minus this machine's, in seconds, known to ± ``uncertainty_s``."""

    host: str
    offset_s: float
    uncertainty_s: float

    def line(self) -> str:
        return f"{self.host}\t{self.offset_s * 1e3:+.3f} ms\t± {self.uncertainty_s * 1e3:.3f} ms"


def measure_offset(executor: Host, program: str) -> ClockOffset:
    """The host's clock offset: ``perflab-load --clock`` on the host answers each line with
    its clock over one SSH session, so a reading costs one round trip of a pipe and the
    network and is bracketed by the two local readings around it (this machine's own clock:
    0 exactly)."""
    from perflab.hosts.remote import RemoteHost

    if not isinstance(executor, RemoteHost):
        return ClockOffset(executor.name, 0.0, 0.0)
    proc = subprocess.Popen(
        executor.conn.argv(f"{shlex.quote(program)} --clock"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    best: tuple[float, float] | None = None
    try:
        for _ in range(CLOCK_READINGS):
            t0 = time.time()
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            t1 = time.time()
            remote = float(line.decode().strip())
            half = (t1 - t0) / 2
            if best is None or half < best[1]:
                best = (remote - (t0 + half), half)
    except (OSError, ValueError):
        raise HostError(
            f"host '{executor.name}': cannot read its clock with perflab-load"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert best is not None
    return ClockOffset(executor.name, best[0], best[1])


@dataclass(frozen=True)
class LoadProcess:
    host: str  # the spec's host name ("local" for this machine)
    index: int  # 1.. within its host
    engine_config: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.host}#{self.index}"


def plan_processes(
    hosts: Sequence[str], per_host: int, engine_config: dict[str, Any]
) -> list[LoadProcess]:
    """One process per host and index. With ``distinct_client_seed`` every process draws
    other keys than the others (its seed moved past every other process's connections), as
    its connections already do among themselves; without it all draw the same, as memtier
    run on several machines with one command line would."""
    out = []
    connections = int(engine_config.get("clients", 1)) * int(engine_config.get("threads", 1))
    for h, host in enumerate(hosts):
        for i in range(per_host):
            cfg = dict(engine_config)
            if cfg.get("distinct_client_seed"):
                cfg["seed"] = int(cfg["seed"]) + (h * per_host + i) * connections
            out.append(LoadProcess(host, i + 1, cfg))
    return out


def run_kv_on_hosts(
    phase: PhaseSpec,
    table: dict[str, Any],
    executors: dict[str, Host],
    *,
    run_dir: Path,
    timeout: float | None,
    stop: threading.Event | None,
    kill_grace: float = TERM_GRACE_S,
) -> KvPhaseResult:
    """Run the phase's load from every process of ``executors`` (spec host name → executor)
    at once, and merge their results."""
    from perflab.errors import InputError
    from perflab.workloads.kv import as_config

    local = installed_program("perflab-load")
    if local is None:
        return KvPhaseResult(None, "failed", "perflab-load is not built (run scripts/setup)")
    try:
        engine = as_config(table).to_engine()
    except InputError as e:
        return KvPhaseResult(None, "failed", e.one_line())
    processes = plan_processes(list(executors), phase.processes, engine)
    try:
        programs = {h: ex.stage(local) for h, ex in executors.items()}
        clocks = [measure_offset(executors[h], programs[h]) for h in executors]
    except HostError as e:
        return KvPhaseResult(None, "failed", e.one_line())
    slowest = max(c.uncertainty_s for c in clocks)
    start = time.time() + START_MARGIN_S + 4 * slowest
    offsets = {c.host: c.offset_s for c in clocks}
    budget = None if timeout is None else timeout + (start - time.time())
    steps: dict[str, StepOutput] = {}

    def one(p: LoadProcess) -> None:
        command = shlex.join(
            [
                programs[p.host],
                "--start-at",
                f"{start + offsets[p.host]:.6f}",
                json.dumps(p.engine_config, separators=(",", ":")),
            ]
        )
        name = f"phase:{phase.name}@{p.name}"
        out, err = output_files(run_dir, name)
        request = StepRequest(
            command,
            run_dir,
            out,
            err,
            shell=False,
            timeout=budget,
            stop=stop,
            kill_grace=kill_grace,
        )
        steps[p.name] = run_command(executors[p.host], name, request)

    threads = [threading.Thread(target=one, args=(p,), daemon=True) for p in processes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clock_lines = [c.line() for c in clocks] + [f"start\t{start:.6f}"]
    artifacts = {f"clocks:{phase.name}": "".join(x + "\n" for x in clock_lines).encode()}
    result = _merged(phase, processes, steps, artifacts, timeout, stop)
    commands = [steps[p.name].record() for p in processes if p.name in steps]
    return dataclasses.replace(result, commands=commands)


def _merged(
    phase: PhaseSpec,
    processes: list[LoadProcess],
    steps: dict[str, StepOutput],
    artifacts: dict[str, bytes],
    timeout: float | None,
    stop: threading.Event | None,
) -> KvPhaseResult:
    """Each process's result read from its stdout, then merged; the first process that
    wrote none fails the phase with its reason."""
    from perflab import _native
    from perflab.workloads.kv_result import KvResult

    texts: list[str] = []
    parts: list[tuple[LoadProcess, KvResult]] = []
    for p in processes:
        step = steps[p.name]
        if step.stderr:
            artifacts[keys.phase_output("stderr", phase.name, p.name)] = step.stderr
        if step.process is not None and (step.process.timed_out or step.process.interrupted):
            status = "interrupted" if step.process.interrupted else "timeout"
            why = "interrupted" if status == "interrupted" else f"timed out after {timeout:g} s"
            return KvPhaseResult(None, status, why, artifacts)
        text = step.stdout.decode("utf-8", "replace").strip()
        if not step.ok or not text.startswith("{"):
            return KvPhaseResult(
                None, "failed", f"load process {p.name}: {step.failure()}", artifacts
            )
        artifacts[keys.kv(phase.name, p.name)] = text.encode()
        texts.append(text)
        parts.append((p, KvResult(json.loads(text))))
    try:
        merged = KvResult(json.loads(_native.kv_merge(texts)))
    except ValueError as e:
        return KvPhaseResult(None, "failed", f"cannot merge the load results: {e}", artifacts)
    result = kv_phase_result(phase, merged, timeout=timeout, stop=stop)
    result.artifacts.update(artifacts)
    name = keys.phase_output("stdout", phase.name)
    result.artifacts[name] = result.artifacts.get(name, b"") + breakdown(parts).encode()
    return result


def breakdown(parts: Sequence[tuple[LoadProcess, KvResult]]) -> str:
    """Per-process figures under the merged table: where each load came from."""
    lines = [
        "",
        "Load processes (merged above: requests summed, latency from the pooled histograms):",
        f"{'process':<20} {'ops/s':>12} {'p50 ms':>9} {'p99 ms':>9} {'failed':>8} {'conns':>6}",
    ]
    for p, r in parts:
        m = r.metrics()
        lines.append(
            f"{p.name[:20]:<20} {m.get('ops_per_sec', 0):>12.1f} "
            f"{m.get('p50_latency_ms', 0):>9.3f} {m.get('p99_latency_ms', 0):>9.3f} "
            f"{r.errors.total:>8d} {int(m.get('connections', 0)):>6d}"
        )
    return "\n".join(lines) + "\n"
