"""CPU profiles of a run's phases with `perf record -g`, folded into stacks (inferno) and
kept per run as the artifact ``profile:PHASE`` (gzip) with ``profile-info:PHASE`` (JSON:
event, kernel stacks or not, mode, host, samples).

Where and how:

* ``process`` (default): the phase's command runs under ``perf record … -- COMMAND`` on the
  phase's host, so its whole process tree is sampled (perf follows forks) and nothing
  else; the command's exit status passes through perf.
* ``system``: ``perf record -a … -- COMMAND``: the whole host while the command runs. A kv
  phase has no command (its load is perflab itself): there ``perf record -a`` runs this
  machine's sampling around a shell that waits for a stop file, and the phase starts once
  that shell does (perf starts its workload only when its events are set up).
* Event: ``cycles`` where the host has a hardware PMU (an event source with cpu-cycles),
  else the ``cpu-clock`` software timer (VMs); 999 samples/s per CPU (not a multiple of the
  usual timer ticks).
* Call graphs from frame pointers (``-g``): cheap, small files, kernel stacks always
  complete. ``--call-graph dwarf`` would unwind code built without frame pointers but copies
  8 KiB of stack per sample (a 20 s phase makes gigabytes) and `perf script` slows to
  minutes; build what you profile with ``-fno-omit-frame-pointer``.
* Kernel stacks where ``kernel.perf_event_paranoid`` allows (root, or ≤ 1); otherwise the
  event is ``:u`` and one warning line per host says so and how to allow them.

Everything runs through the phase's executor (`perflab.hosts.base.Host`), so a
remote host needs only perf and a shell: `perf script` runs there and its text comes back
as the step's output, folded here.
"""

from __future__ import annotations

import json
import shlex
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from perflab.hosts.base import Host
from perflab.hosts.step import StepRequest
from perflab.observe.folded import compress
from perflab.store import artifact_keys as keys

MODES = ("process", "system")
FREQUENCY = 999  # samples per second per CPU
#: `perf script` fields: one count per sample (no period: cpu-clock's is nanoseconds)
SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
#: `perf script -G` fields: each sample's leaf, matched to its stack by time
LEAF_FIELDS = "time,ip,sym,dso"
MAX_SCRIPT_BYTES = 1 << 30  # `perf script` text larger than this is not folded

#: What a host can do, in four lines: perf's path, perf_event_paranoid, uid, a PMU's cycles.
_HOST_PROBE = (
    "command -v perf || echo; cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo; "
    "id -u; ls -d /sys/bus/event_source/devices/*/events/cpu-cycles "
    "/sys/bus/event_source/devices/*/events/cpu_cycles 2>/dev/null | head -n 1; echo"
)


class ProfileError(Exception):
    """Profiling was asked for and cannot be done (one line: what and how to fix it)."""


def phase_mode(experiment: object, phase: object, forced: bool | str = False) -> str | None:
    """How a phase is profiled: "process", "system" or None. The phase's own ``profile``
    wins (false: never); else the experiment's, for measured phases. ``forced`` (`perflab
    run --profile`: True or "process", `--profile-system`: "system") profiles every measured
    phase not set to false, in that mode. A phase profiled on a host of its own
    (``profile_on``) is recorded whole there: "system"."""
    mode = _mode(experiment, phase, forced)
    return "system" if mode and getattr(phase, "profile_on", None) else mode


def _mode(experiment: object, phase: object, forced: bool | str) -> str | None:
    own = getattr(phase, "profile", None)
    top = getattr(experiment, "profile", None)
    if own is False:
        return None
    if isinstance(own, str):
        return own
    cli = forced if isinstance(forced, str) else ("process" if forced else None)
    mode = cli or (top if isinstance(top, str) else "process")
    if own is True:
        return mode
    if not getattr(phase, "measure", True):
        return None
    return mode if cli or top else None


@dataclass(frozen=True)
class HostPerf:
    """What perf can do on one host."""

    perf: str  # its path there
    event: str  # "cycles" (a hardware PMU) or "cpu-clock"
    kernel: bool  # kernel stacks allowed
    system: bool  # -a allowed
    paranoid: int | None
    root: bool

    def kernel_warning(self, host: str) -> str:
        return (
            f"profile: kernel stacks left out on {host} (kernel.perf_event_paranoid = "
            f"{self.paranoid}, not root); allow them with: sysctl kernel.perf_event_paranoid=1"
        )


def read_host_perf(text: str, host: str) -> HostPerf:
    """`_HOST_PROBE`'s output → `HostPerf`; ProfileError when perf cannot sample there."""
    lines = [*text.splitlines(), "", "", "", ""]
    perf, paranoid_text, uid, pmu = (x.strip() for x in lines[:4])
    if not perf:
        raise ProfileError(f"profile: perf not found on {host}: install linux-perf (Debian)")
    paranoid = int(paranoid_text) if paranoid_text.lstrip("-").isdigit() else None
    root = uid == "0"
    if not root and (paranoid is None or paranoid > 2):
        raise ProfileError(
            f"profile: perf may not sample on {host} (kernel.perf_event_paranoid = "
            f"{paranoid_text or 'unknown'}, not root); allow it with: "
            "sysctl kernel.perf_event_paranoid=1"
        )
    return HostPerf(
        perf=perf,
        event="cycles" if pmu else "cpu-clock",
        kernel=root or (paranoid is not None and paranoid <= 1),
        system=root or (paranoid is not None and paranoid <= 0),
        paranoid=paranoid,
        root=root,
    )


@dataclass
class Profiles:
    """The experiment's profiling: what each host can do (asked once). ``message`` prints a
    note (the runner's, which says each once)."""

    model: object  # the ExperimentSpec
    forced: bool | str = False  # perflab run --profile (True) / --profile-system ("system")
    message: Callable[[str], None] = lambda _text: None
    _hosts: dict[str, HostPerf] = field(default_factory=dict)

    def mode(self, phase: object) -> str | None:
        return phase_mode(self.model, phase, self.forced)

    def host_perf(
        self, executor: Host, env: Mapping[str, str], cwd: Path, scratch: Path
    ) -> HostPerf:
        key = executor.name
        if key not in self._hosts:
            out, err = scratch / "perf-probe.out", scratch / "perf-probe.err"
            executor.run(StepRequest(_HOST_PROBE, cwd, out, err, env, timeout=30.0))
            self._hosts[key] = read_host_perf(_read(out), key)
        hp = self._hosts[key]
        if not hp.kernel:
            self.message(hp.kernel_warning(key))
        return hp

    def begin(
        self,
        phase: str,
        mode: str,
        executor: Host,
        env: Mapping[str, str],
        cwd: Path,
        scratch: Path,
        local: bool,
    ) -> PhaseProfile:
        """A phase's profile, ready to `wrap` its command (process) or `start` (system)."""
        hp = self.host_perf(executor, env, cwd, scratch)
        if mode == "system" and not hp.system:
            raise ProfileError(
                f'profile = "system" needs root or kernel.perf_event_paranoid ≤ 0 on '
                f"{executor.name} (it is {hp.paranoid}): sysctl kernel.perf_event_paranoid=0"
            )
        name = f"perflab-profile-{uuid.uuid4().hex[:12]}.data"
        data = str(scratch / name) if local else f"/tmp/{name}"
        return PhaseProfile(phase, mode, hp, executor, dict(env), cwd, scratch, data)


@dataclass
class PhaseProfile:
    """One phase's recording: its perf command, then `finish` → the run's artifacts."""

    phase: str
    mode: str
    perf: HostPerf
    executor: Host
    env: dict[str, str]
    cwd: Path
    scratch: Path
    data: str  # perf.data's path on the phase's host
    _thread: threading.Thread | None = None
    _error: str = ""  # why the recorder of `start` could not run

    def record_argv(self) -> list[str]:
        event = self.perf.event + ("" if self.perf.kernel else ":u")
        argv = [self.perf.perf, "record", "-q", "-N", "-e", event, "-F", str(FREQUENCY), "-g"]
        return argv + (["-a"] if self.mode == "system" else []) + ["-o", self.data]

    def wrap(self, command: str, shell: bool) -> tuple[str, bool]:
        """The phase's command under perf: the same command, its whole process tree (or
        with ``-a`` the whole host) sampled while it runs; ``shell`` as before (a shell command
        runs in ``sh -c``)."""
        perf = shlex.join([*self.record_argv(), "--"])
        if shell:
            return f"{perf} sh -c {shlex.quote(command)}", True
        return f"{perf} {command}", False

    def start(self) -> None:
        """Record beside a phase whose command is not its own (a kv phase: the load is
        perflab itself; a phase recorded on another host, ``profile_on``): ``perf record
        -a`` around a shell that waits on a FIFO, started in a thread; returns once perf
        samples (its workload started: perf runs it only once its events are set up). The
        shell blocks in `read` until `finish` writes a line: nothing polls on the host while
        the phase runs (a device's CPU is the one measured)."""
        ready, stop = shlex.quote(self.data + ".ready"), shlex.quote(self.data + ".stop")
        # opened read-write, the FIFO never blocks an open: neither this shell's, nor the
        # stopper's when this shell is gone
        wait = f"mkfifo {stop} && exec 3<>{stop} && touch {ready} && read line <&3"
        command = shlex.join([*self.record_argv(), "--", "sh", "-c", wait])

        spawned = threading.Event()

        def record() -> None:
            try:
                self._run(command, "perf-record", None, lambda _pid: spawned.set())
            except Exception as e:  # told by `finish` (perf wrote nothing)
                self._error = f"{type(e).__name__}: {e}"
            finally:
                spawned.set()

        self._thread = threading.Thread(target=record, name=f"perf-{self.phase}", daemon=True)
        self._thread.start()
        # A local spawn switches this process's cwd for an instant (execution/process.py): nothing
        # else is started until it is done (a remote executor does not say: 10 s at most).
        spawned.wait(10.0)
        self._run(
            f"i=0; while [ ! -e {ready} ] && [ $i -lt 2000 ]; do i=$((i+1)); sleep 0.005; done",
            "perf-ready",
            30.0,
        )

    def _run(
        self,
        command: str,
        name: str,
        timeout: float | None,
        on_start: Callable[[int], None] | None = None,
    ) -> None:
        out, err = self.scratch / f"{name}.out", self.scratch / f"{name}.err"
        request = StepRequest(
            command, self.cwd, out, err, self.env, timeout=timeout, on_start=on_start
        )
        self.executor.run(request)

    def finish(self) -> dict[str, bytes]:
        """Stop a recording begun by `start`, fold what perf wrote (`perf script` where it
        ran) and return the artifacts; ProfileError when there is nothing to fold."""
        from perflab import _native

        data = shlex.quote(self.data)
        if self._thread is not None:
            stop = shlex.quote(self.data + ".stop")
            self._run(f"[ -p {stop} ] && exec 3<>{stop} && echo >&3", "perf-stop", 30.0)
            self._thread.join()
        try:
            script = self._script("perf-script", f"--no-inline -F {SCRIPT_FIELDS}")
            leaves = None
            stackless = _native.stackless_samples(script)
            if stackless:
                # no call chain for a sample taken in user space (a MIPS kernel records
                # none): its leaf, from a second pass, stands for its stack
                leaves = self._script("perf-leaves", f"-G -F {LEAF_FIELDS}")
        finally:
            files = " ".join(f"{data}{end}" for end in ("", ".old", ".ready", ".stop"))
            self._run(f"rm -f {files}", "perf-clean", 30.0)
        return self.artifacts(script, leaves, stackless)

    def _script(self, name: str, options: str) -> str:
        """`perf script OPTIONS` of the recording, where it ran; its text."""
        out, err = self.scratch / f"{name}.out", self.scratch / f"{name}.err"
        command = f"{shlex.quote(self.perf.perf)} script {options} -i {shlex.quote(self.data)}"
        self.executor.run(StepRequest(command, self.cwd, out, err, self.env))
        where = f"profile of phase {self.phase} on {self.executor.name}"
        if not out.exists() or out.stat().st_size == 0:
            why = _read(err).strip().splitlines()[-1:] or [self._error or "no samples"]
            raise ProfileError(f"{where}: perf script: {why[0]}")
        if out.stat().st_size > MAX_SCRIPT_BYTES:
            raise ProfileError(f"{where}: perf script output over 1 GiB")
        return _read(out)

    def artifacts(
        self, script: str, leaves: str | None = None, stackless: int = 0
    ) -> dict[str, bytes]:
        """The run's artifacts from `perf script` text; ``leaves`` (one line a sample:
        time, ip, symbol, dso) give its ``stackless`` samples (no stack) their leaf."""
        from perflab import _native

        if leaves is not None:
            try:
                script = _native.fill_stackless(script, leaves)
            except ValueError as e:
                raise ProfileError(f"profile of phase {self.phase}: perf script: {e}") from e
        folded = _native.fold_perf_script(script, annotate_kernel=True)
        samples = sum(int(line.rpartition(" ")[2] or 0) for line in folded.splitlines())
        info = {
            "mode": self.mode,
            "event": self.perf.event,
            "kernel": self.perf.kernel,
            "call_graph": "fp",
            "frequency": FREQUENCY,
            "host": self.executor.name,
            "samples": samples,
            # samples taken in user space with no call chain (the host's kernel records
            # none), each folded as its leaf alone
            "leaf_only": stackless if leaves is not None else 0,
        }
        return {
            keys.profile(self.phase): compress(folded),
            keys.profile_info(self.phase): (json.dumps(info) + "\n").encode(),
        }


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""
