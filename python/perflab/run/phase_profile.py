"""The seam between a run and its phases' profiles (`perflab.observe.profile`): where a
phase's profile is recorded (its host; this machine for a kv phase), with which
environment, and what a profile that cannot be recorded does to the run (fails it, one
line saying why)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.hosts.ssh import HostError
from perflab.observe.profile import PhaseProfile, ProfileError
from perflab.run.failure_policy import Failure

if TYPE_CHECKING:
    from perflab.spec.schema import PhaseSpec
    from perflab.store import RunRow


class _Execution(Protocol):
    """What of `perflab.run.run_execution.RunExecution` a profile uses."""

    runner: Any  # the RunContext
    run: RunRow
    values: dict[str, Any]
    run_dir: Path
    failure: tuple[str, Failure] | None
    artifacts: dict[str, bytes]


def start_profile(ex: _Execution, name: str, phase: PhaseSpec | None) -> PhaseProfile | None:
    """The phase's profile, begun (a system one already recording); None when the phase is
    not profiled or its profile cannot be (then ``ex.failure`` says why)."""
    r = ex.runner
    mode = None if phase is None or ex.run.warmup else r.profiles.mode(phase)
    if mode is None or phase is None:
        return None
    if phase.probe is not None:
        r.profiles.tell(
            f"profile: phase {phase.name} is a probe (in perflab's process): not profiled"
        )
        return None
    if phase.kv is not None and mode == "process":
        r.profiles.tell(
            f"profile: phase {phase.name} is a kv phase (its load is perflab itself): not "
            'profiled; profile = "system" records this whole machine during it'
        )
        return None
    host = phase.host if phase.kv is None else None
    executor = r.hosts[host]
    env = r.hosts.env_for(host, r.step_env(ex.run, ex.values, phase))
    local = executor is r.hosts.local
    # perf's commands name their files by absolute path: here they start in the run's own
    # directory (the spec's workdir may be made by a phase), there where its steps start
    cwd = ex.run_dir if local else r.spec.workdir
    try:
        profile: PhaseProfile = r.profiles.begin(
            phase.name, mode, executor, env, cwd, ex.run_dir, local
        )
        if phase.kv is not None:  # no command to run under perf: record beside it
            profile.start()
    except (ProfileError, HostError, OSError) as e:
        _fail(ex, name, e)
        return None
    return profile


def finish_profile(ex: _Execution, name: str, profile: PhaseProfile | None) -> None:
    """Stop and fold the phase's profile into the run's artifacts (after a failed phase
    too: its recorder is stopped, its file removed, nothing kept)."""
    if profile is None:
        return
    try:
        artifacts = profile.finish()
    except (ProfileError, HostError, OSError) as e:
        if ex.failure is None:
            _fail(ex, name, e)
        return
    if ex.failure is None:
        ex.artifacts.update(artifacts)


def _fail(ex: _Execution, name: str, e: Exception) -> None:
    why = e.one_line() if isinstance(e, HostError) else str(e)
    ex.failure = ("failed", Failure(name, "profile", f"{name}: {why}"))
