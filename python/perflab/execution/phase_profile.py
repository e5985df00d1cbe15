"""The seam between a run and its phases' profiles (`perflab.observe.profile`): a phase's
kind says how it is profiled (`ProfilePlan`: on which host, around its command or beside
it; or why not), this records it there with the step's environment, and decides what a
profile that cannot be recorded does to the run (fails it, one line saying why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from perflab.execution.failure_policy import Failure
from perflab.hosts.ssh import HostError
from perflab.observe.profile import PhaseProfile, ProfileError
from perflab.spec.phase_kinds import kind_of

if TYPE_CHECKING:
    from perflab.execution.run_context import PhaseExecution
    from perflab.spec.schema import PhaseSpec


@dataclass(frozen=True)
class ProfilePlan:
    """How a phase is profiled: on ``host`` (None: this machine), its command run under
    perf (`PhaseProfile.wrap`), or — ``beside``, a phase with no command of its own —
    recorded while it runs (`PhaseProfile.start`)."""

    host: str | None
    beside: bool = False


class Profiled(Protocol):
    """A phase kind's profiling behaviour (its runner, `perflab.execution.phase_kinds`)."""

    def profile_plan(self, phase: PhaseSpec, mode: str) -> ProfilePlan | str:
        """How ``phase`` is profiled in ``mode`` ("process" or "system"), or the note said
        once when it is not."""
        ...


def start_profile(
    ex: PhaseExecution, name: str, phase: PhaseSpec, how: Profiled
) -> PhaseProfile | None:
    """The phase's profile as its kind plans it (``how``), begun (one recorded beside it
    already recording); None when the phase is not profiled or its profile cannot be (then
    ``ex.failure`` says why)."""
    r = ex.runner
    mode = None if ex.run.warmup else r.profiles.mode(phase)
    if mode is None:
        return None
    plan = _elsewhere(phase) or how.profile_plan(phase, mode)
    if isinstance(plan, str):
        r.say_once(plan)
        return None
    host = plan.host
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
        if plan.beside:  # no command to run under perf: record beside it
            profile.start()
    except (ProfileError, HostError, OSError) as e:
        _fail(ex, name, e)
        return None
    return profile


def _elsewhere(phase: PhaseSpec) -> ProfilePlan | None:
    """A phase recorded on a host that is not where its command runs (``profile_on``: a
    device under test while the load comes from here): recorded beside it, there."""
    host = phase.profile_on
    if host is None or (host == phase.host and kind_of(phase).runs_command):
        return None
    return ProfilePlan(host=None if host == "local" else host, beside=True)


def finish_profile(ex: PhaseExecution, name: str, profile: PhaseProfile | None) -> None:
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


def _fail(ex: PhaseExecution, name: str, e: Exception) -> None:
    why = e.one_line() if isinstance(e, HostError) else str(e)
    ex.failure = ("failed", Failure(name, "profile", f"{name}: {why}"))
