"""`perflab bisect`: the first commit that made a metric worse, found with experiments.

Between a good and a bad commit of ``--repo`` (the first-parent commits of
``git rev-list --first-parent --ancestry-path good..bad``), each step runs ONE ordinary
experiment (`perflab.api.running.run_experiment`) made from the user's file
(`bisect_spec`): variants ``good`` (the baseline), ``candidate`` (the middle of the range
still in question) and ``bad``, each building and measuring its own commit, run in
interleaved blocks with adaptive repetitions until the intervals are narrow enough to tell
the candidate from the end it differs from (`bisect_spec.target_for`). The step's verdict
(`bisect_verdict`) moves one end to the candidate (`perflab.commits.search`), until the ends are
neighbours. Each step is stored as experiment ``NAME-bisect-step-K``: `perflab compare`
works on it. The only commands run besides the file's own are git's, on ``--repo``
(`perflab.commits.git`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.api.bisect_spec import BAD, CANDIDATE, GOOD
from perflab.api.bisect_verdict import Change, StepEvidence
from perflab.commits.git import Commit
from perflab.commits.search import Search, expected_steps
from perflab.errors import InputError, StoreError

if TYPE_CHECKING:
    from perflab.api.bisect_spec import BisectSpec
    from perflab.execution.runner import Observer
    from perflab.spec import Spec

#: The JSON document's schema (`BisectResult.to_dict`; `perflab bisect --json`).
SCHEMA = "perflab.bisect/1"
#: How a bisect ended: the first bad commit found, or why not.
STATUSES = ("found", "undecided", "no_regression", "end_failed", "skipped_range", "max_steps")


@dataclass(frozen=True)
class BisectRequest:
    """A bisect: the experiment file ``spec`` (its baseline variant builds ``{commit}``),
    the ``good`` and ``bad`` revisions of ``repo`` (default: the current folder), the
    ``metric`` (default: the file's first), the ``store``, and at most ``max_steps``
    steps (None: as many as it takes)."""

    spec: str | Path
    good: str
    bad: str
    repo: str | Path | None = None
    metric: str | None = None
    store: str | None = None
    max_steps: int | None = None
    #: go on with the same bisect: a step the store holds finished (the same experiment
    #: file: the same commits and precision) is read back, an unfinished one continued
    resume: bool = False

    def __post_init__(self) -> None:
        if self.max_steps is not None and (
            isinstance(self.max_steps, bool)
            or not isinstance(self.max_steps, int)
            or self.max_steps < 1
        ):
            raise InputError(f"max_steps must be a whole number ≥ 1 (got {self.max_steps!r})")


@dataclass(frozen=True)
class BisectPlan:
    """What is bisected: the resolved ends, the commits in between (oldest first, bad
    last), the metric and its better direction."""

    repo: Path
    good: Commit
    bad: Commit
    commits: list[Commit]
    metric: str
    better: str

    @property
    def expected_steps(self) -> int:
        """⌈log2(commits)⌉: the steps a bisect without skipped commits takes."""
        return expected_steps(len(self.commits))


@dataclass(frozen=True)
class BisectStep:
    """One step: its ``candidate`` (at ``position`` in the range) against the ends of the
    range then, the precision ``target`` its repetitions ran to, the ids of the
    experiments it ran (a second one when the first stopped too coarse to decide), and
    what they showed (`StepEvidence`: the changes and the decision)."""

    number: int
    candidate: Commit
    position: int
    good: Commit
    bad: Commit
    target: float
    experiments: tuple[int, ...]
    evidence: StepEvidence

    @property
    def decision(self) -> str:
        return self.evidence.decision

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.number,
            "commit": self.candidate.id,
            "subject": self.candidate.subject,
            "good": self.good.id,
            "bad": self.bad.id,
            "target_ci": self.target,
            "experiments": list(self.experiments),
            **self.evidence.to_dict(),
        }


@dataclass(frozen=True)
class BisectResult:
    """How the bisect ended (``status``, one of `STATUSES`; ``message`` in words), its
    steps, and when found the first bad commit with its parent and the change between
    them (``change``: first bad against parent, from experiment ``change_experiment``);
    otherwise ``suspects``: the commits the first bad one is still among."""

    status: str
    message: str
    plan: BisectPlan
    steps: list[BisectStep]
    first_bad: Commit | None = None
    parent: Commit | None = None
    change: Change | None = None
    change_experiment: int | None = None
    suspects: tuple[Commit, ...] = ()

    @property
    def found(self) -> bool:
        return self.status == "found"

    @property
    def skipped(self) -> int:
        return sum(1 for s in self.steps if s.decision == "skip")

    def to_dict(self) -> dict[str, Any]:
        p = self.plan
        return {
            "schema": SCHEMA,
            "status": self.status,
            "message": self.message,
            "repo": str(p.repo),
            "good": p.good.id,
            "bad": p.bad.id,
            "metric": p.metric,
            "better": p.better,
            "commits": len(p.commits),
            "expected_steps": p.expected_steps,
            "steps_run": len(self.steps),
            "skipped": self.skipped,
            "first_bad": None if self.first_bad is None else _commit(self.first_bad),
            "parent": None if self.parent is None else _commit(self.parent),
            "change": None if self.change is None else self.change.to_dict(),
            "change_experiment": self.change_experiment,
            "suspects": [_commit(c) for c in self.suspects],
            "steps": [s.to_dict() for s in self.steps],
        }


def _commit(c: Commit) -> dict[str, str]:
    return {"id": c.id, "subject": c.subject}


class BisectObserver(Protocol):
    """What a bisect reports as it goes; the CLI prints each step."""

    def started(self, plan: BisectPlan) -> None: ...
    def step_started(self, number: int, candidate: Commit, good: Commit, bad: Commit) -> None: ...
    def step_finished(self, step: BisectStep) -> None: ...


class SilentBisect:
    """Reports nothing (`bisect`'s default)."""

    def started(self, plan: BisectPlan) -> None: ...
    def step_started(self, number: int, candidate: Commit, good: Commit, bad: Commit) -> None: ...
    def step_finished(self, step: BisectStep) -> None: ...


def prepare(request: BisectRequest) -> tuple[BisectPlan, BisectSpec]:
    """The range and the file, checked — before anything runs (one-line errors)."""
    from perflab.api.bisect_spec import read_spec
    from perflab.commits.git import (
        check_clean,
        first_parent_range,
        repository,
        resolve,
        subject,
    )

    repo = repository(request.repo)
    good = resolve(repo, request.good, "good")
    bad = resolve(repo, request.bad, "bad")
    commits = first_parent_range(repo, good, bad)
    check_clean(repo)
    spec = read_spec(request.spec, request.metric)
    plan = BisectPlan(
        repo, Commit(good, subject(repo, good)), commits[-1], commits, spec.metric, spec.better
    )
    return plan, spec


def bisect(
    request: BisectRequest,
    observer: BisectObserver | None = None,
    runs: Callable[[], Observer] | None = None,
) -> BisectResult:
    """Bisect ``request`` to its end; ``observer`` hears of each step, and ``runs()``, made
    anew for each step's experiment, of its runs (a `perflab.execution.runner.Observer`: the
    CLI's progress bar). An interrupted step raises KeyboardInterrupt; every step is a new
    experiment, so the same bisect again starts over. Bad input (a revision git does not
    know, a file bisect cannot use) is a one-line error before anything runs."""
    from perflab.api.bisect_spec import target_for

    plan, spec = prepare(request)
    told: BisectObserver = observer or SilentBisect()
    told.started(plan)
    search = Search(len(plan.commits))
    steps: list[BisectStep] = []
    target = spec.design.first_target
    while not search.found and not search.stuck:
        if request.max_steps is not None and len(steps) >= request.max_steps:
            return _unfinished(
                plan, steps, search, "max_steps", f"stopped after {len(steps)} steps (--max-steps)"
            )
        position = search.next()
        assert position is not None
        good, bad = _ends(plan, search)
        candidate = plan.commits[position]
        told.step_started(len(steps) + 1, candidate, good, bad)
        step = _step(
            request, spec, plan, len(steps) + 1, position, (good, candidate, bad), target, runs
        )
        steps.append(step)
        told.step_finished(step)
        target = target_for(step.evidence.ends.estimate, target)
        if step.decision not in ("good", "bad", "skip"):
            return _unfinished(plan, steps, search, step.decision, _stopped_at(step))
        search.mark(position, step.decision)
    if search.stuck:
        return _unfinished(
            plan,
            steps,
            search,
            "skipped_range",
            "only commits that could not be measured are left between the ends: the first "
            "bad commit is one of the suspects",
        )
    return _found(request, plan, steps, search)


def _ends(plan: BisectPlan, search: Search) -> tuple[Commit, Commit]:
    good = plan.commits[search.good] if search.good >= 0 else plan.good
    return good, plan.commits[search.bad]


def _step(
    request: BisectRequest,
    spec: BisectSpec,
    plan: BisectPlan,
    number: int,
    position: int,
    commits: tuple[Commit, Commit, Commit],
    target: float,
    runs: Callable[[], Observer] | None,
) -> BisectStep:
    """One step's experiment — and a second, finer one when the first reached its target
    undecided (`retry_target`)."""
    from perflab.api.bisect_spec import step_spec
    from perflab.api.bisect_verdict import early_answer, read_step
    from perflab.api.running import RunRequest, run_experiment

    ids = dict(zip((GOOD, CANDIDATE, BAD), (c.id for c in commits)))
    subjects = dict(zip((GOOD, CANDIDATE, BAD), (c.subject for c in commits)))
    experiments: list[int] = []
    while True:
        attempt = len(experiments) + 1
        step = step_spec(spec, number, ids, subjects, plan.repo, target, attempt)
        done = _finished_step(request, step) if request.resume else None
        if done is None:
            watcher = runs() if runs is not None else None
            ran = run_experiment(
                RunRequest(
                    spec=step,
                    store=request.store,
                    new=not request.resume,
                    decided=early_answer(plan.metric, plan.better),
                ),
                watcher,
            )
            done = ran.experiment_id
            if ran.outcome.status == "interrupted":
                raise KeyboardInterrupt(
                    f"bisect interrupted in step {number} (experiment {done}); the steps so "
                    "far are stored: the same bisect with --resume goes on from here"
                )
        experiments.append(done)
        evidence = read_step(request.store, done, plan.metric, plan.better)
        again = retry_target(evidence, target, attempt)
        if again is not None:
            target = again
            continue
        return BisectStep(
            number,
            commits[1],
            position,
            commits[0],
            commits[2],
            target,
            tuple(experiments),
            evidence,
        )


def retry_target(evidence: StepEvidence, target: float, attempt: int) -> float | None:
    """The precision target of a step's second experiment, or None for no second one.

    A first experiment that reached its ``target`` undecided runs again, afresh, to the
    finer of the target the change it measured asks for (`bisect_spec.target_for`; the
    first step's target is a guess) and half its own. Undecided at its target, the
    candidate sat between the ends, or beside both: a spread change, or a burst of noise
    in those blocks — a candidate identical to bad measured 17% better than bad, at 95%,
    in 5 blocks of a 50% regression on a busy CI runner. The second experiment, at another
    time and twice the precision, tells them apart. One that ran to the spec's most blocks
    does not run again (the spec's budget), nor a second one."""
    from perflab.api.bisect_spec import MIN_TARGET, target_for

    if attempt > 1 or evidence.decision != "undecided" or evidence.stop_reason != "target_reached":
        return None
    return max(MIN_TARGET, min(target_for(evidence.ends.estimate, target), target / 2))


def _finished_step(request: BisectRequest, step: Spec) -> int | None:
    """The experiment of ``step`` that an earlier run of this bisect finished (the same
    file: name, commits and precision alike), or None."""
    from perflab.store import Database

    try:
        with Database(request.store, write=False, create=False) as db:
            found = [
                e.id
                for e, _ in db.experiments()
                if e.name == step.model.name
                and e.spec_sha256 == step.sha256
                and e.status in ("complete", "aborted")
            ]
    except StoreError:  # no store yet: nothing was run
        return None
    return max(found, default=None)


def _found(
    request: BisectRequest, plan: BisectPlan, steps: list[BisectStep], search: Search
) -> BisectResult:
    """The first bad commit, and its change against its parent from the last step (which
    ran both: the candidate and the end it was decided against)."""
    from perflab.api.bisect_verdict import pair_change

    first_bad, parent = _ends(plan, search)[::-1]
    change, experiment = None, None
    if steps:
        last = steps[-1]
        experiment = last.evidence.experiment_id
        if last.decision == "bad":  # the candidate is the first bad, good its parent
            change = last.evidence.vs_good
        else:  # the candidate is the parent, bad the first bad
            change = pair_change(request.store, experiment, CANDIDATE, BAD, plan.metric)
    n = len(steps)
    message = (
        f"first bad commit {first_bad.short} after {n} step{'s' if n != 1 else ''}"
        if steps
        else f"{first_bad.short} is the only commit after good: nothing to measure"
    )
    return BisectResult(
        "found", message, plan, steps, first_bad, parent, change, experiment, (first_bad,)
    )


def _stopped_at(step: BisectStep) -> str:
    """Why ``step`` ends the bisect, in words."""
    ev = step.evidence
    text = f"step {step.number} ({step.candidate.short}): {ev.why}"
    if step.decision in ("undecided", "no_regression"):
        text += f" (after {ev.blocks} blocks)"
        if ev.stop_reason == "max_reached":
            text += (
                "; that is the most the spec allows: raise its repetitions' max "
                '(repetitions = { min = 5, max = 100, target_ci = "2%" }), or quiet the machine'
            )
    return text


def _unfinished(
    plan: BisectPlan, steps: list[BisectStep], search: Search, status: str, why: str
) -> BisectResult:
    suspects = tuple(plan.commits[i] for i in search.suspects)
    return BisectResult(status, why, plan, steps, suspects=suspects)
