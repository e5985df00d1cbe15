"""Running an experiment: `perflab run` and `perflab.run(spec)` both call `run_experiment`
— from opening (or continuing) the experiment in the store to the runner's end, with the
export files rewritten after every run — and differ only in what they print."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.analysis.answer import Answer
    from perflab.api.lab import Experiment
    from perflab.execution.adaptive import Decided
    from perflab.execution.experiment import OpenedExperiment
    from perflab.execution.runner import ExperimentOutcome, Observer
    from perflab.report.output import ExportManager
    from perflab.spec import Spec
    from perflab.store import Database, RunRow
    from perflab.store.location import StoreURL


@dataclass(frozen=True)
class RunRequest:
    """An experiment to run: a loaded ``spec`` (its unfinished experiment continued unless
    ``new``), or experiment ``resume`` continued; ``store``: None for the default."""

    spec: Spec | None
    store: str | None = None
    resume: str | None = None
    new: bool = False
    max_failures: int | None = None
    export: tuple[str, ...] = ()
    profile: bool | str = False
    #: The version measured, over the spec's ``version`` (a new experiment's only).
    version: str | None = None
    #: Ends adaptive repetitions once the runs answer a question (`perflab.execution.adaptive`).
    decided: Decided | None = None


@dataclass(frozen=True)
class Ran:
    """How it went: the experiment's id, the runner's outcome, and the store's path."""

    experiment_id: int
    outcome: ExperimentOutcome
    store_path: Path | StoreURL
    #: The comparison at the end (`run_experiment(..., compare=True)` with an ok run).
    comparison: Answer | None = None

    @property
    def ok(self) -> int:
        return int(self.outcome.counts.get("ok", 0))

    @property
    def failed(self) -> int:
        counts = self.outcome.counts
        return int(sum(n for s, n in counts.items() if s in ("failed", "timeout")))


def check_exports(paths: Sequence[str]) -> ExportManager:
    """The export files, their formats and folders checked before anything runs."""
    from perflab.report.output import ExportManager

    return ExportManager(list(paths))


def run_experiment(
    request: RunRequest,
    observer: Observer | None = None,
    *,
    opened: Callable[[OpenedExperiment], None] | None = None,
    compare: bool = False,
) -> Ran:
    """Run ``request`` to its end (or the failure policy's stop, or an interrupt).

    ``observer``: progress events (default: none); ``opened``: called once the experiment
    is created or found (the CLI says it continues one); ``compare``: the comparison of
    the stored runs at the end, with its default options (`Ran.comparison`)."""
    from perflab.execution.experiment import open_experiment
    from perflab.execution.runner import Runner, SilentObserver
    from perflab.store import Database

    if (request.spec is None) == (request.resume is None):
        raise InputError("give an experiment file, or --resume ID")
    exports = check_exports(request.export)
    position = None
    if request.spec is not None:  # the version command runs before the store is touched
        from perflab.execution.position import resolve_position

        position = resolve_position(request.spec, request.version)
    elif request.version is not None:
        raise InputError(
            "--version names the version of a new experiment; a resumed one keeps its own"
        )
    with Database(request.store, write=True, create=request.resume is None) as db:
        found = open_experiment(
            db, request.spec, resume=request.resume, new=request.new, position=position
        )
        if opened is not None:
            opened(found)
        watcher: Observer = observer if observer is not None else SilentObserver()
        if exports.paths:
            watcher = ExportingObserver(watcher, exports, db, found.id)
        outcome = Runner(
            db,
            found.spec,
            found.id,
            observer=watcher,
            max_failures=request.max_failures,
            profile=request.profile,
            decided=request.decided,
        ).run()
        ran = Ran(found.id, outcome, db.path)
        if compare and outcome.status != "interrupted" and ran.ok:
            from perflab.analysis.answer import answer
            from perflab.analysis.request import ComparisonRequest

            ran = Ran(found.id, outcome, db.path, answer(db, ComparisonRequest(found.id)))
    return ran


class ExportingObserver:
    """Passes events on, and rewrites the export files after every finished run."""

    def __init__(
        self, inner: Observer, exports: ExportManager, store: Database, experiment_id: int
    ):
        self.inner, self.exports, self.store, self.eid = inner, exports, store, experiment_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run_finished(self, run: RunRow, outcome: object, index: int, total: int) -> None:
        self.inner.run_finished(run, outcome, index, total)  # type: ignore[arg-type]
        self._write()

    def finished(self, summary: object) -> None:
        self._write()
        self.inner.finished(summary)  # type: ignore[arg-type]

    def _write(self) -> None:
        from perflab.analysis.answer import answer
        from perflab.analysis.request import ComparisonRequest

        self.exports.write(answer(self.store, ComparisonRequest(self.eid)))


def run(
    spec: str | os.PathLike[str] | None = None,
    *,
    store: str | os.PathLike[str] | None = None,
    resume: str | int | None = None,
    new: bool = False,
    max_failures: int | None = None,
    export: Sequence[str | os.PathLike[str]] = (),
    observer: Observer | None = None,
    profile: bool | str = False,
    version: str | None = None,
) -> Experiment:
    """Execute the experiment file ``spec`` — or continue experiment ``resume`` — storing
    every run as it finishes, as `perflab run` does; returns the experiment as stored at
    the end (its ``status``, ``counts``, and ``.runs()`` / ``.compare()``).

    - ``store``: the results database (default: ``$PERFLAB_STORE``, else ``./perflab.db``);
    - the same spec again continues its unfinished experiment unless ``new``;
    - ``max_failures``: stop when N runs in a row, or the first N of a variant, fail the
      same way (default: the spec's; 0 never stops);
    - ``export``: comparison files (``.json``, ``.csv``, ``.md``) rewritten after every run;
    - ``observer``: progress events (a `perflab.execution.runner.Observer`; default: none);
    - ``profile``: a perf profile of every measured phase, as `perflab run --profile`
      (True or "process": each phase's processes; "system": the whole host, also during
      kv phases);
    - ``version``: the version measured (``perflab run --version``), over the spec's
      ``version``: the experiment's place in a series (`perflab history`).

    Failed runs do not raise: the experiment says how many (``failed``) and whether the
    failure policy stopped it (``status == "aborted"``). An interrupted run (Ctrl-C,
    SIGTERM) raises KeyboardInterrupt once the experiment is left resumable;
    ``perflab.run(resume=ID)`` continues it. A bad spec or option: a one-line
    `perflab.errors.PerflabError` before anything runs.
    """
    from perflab.api.lab import Store
    from perflab.spec import load_spec

    if (spec is None) == (resume is None):
        raise InputError("give an experiment file, or resume=ID")
    if max_failures is not None and (
        isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0
    ):
        raise InputError(f"max_failures must be a whole number ≥ 0 (got {max_failures!r})")
    request = RunRequest(
        spec=load_spec(Path(spec)) if spec is not None else None,
        store=None if store is None else os.fspath(store),
        resume=None if resume is None else str(resume),
        new=new,
        max_failures=max_failures,
        export=tuple(os.fspath(p) for p in export),
        profile=profile,
        version=version,
    )
    ran = run_experiment(request, observer)
    if ran.outcome.status == "interrupted":
        raise KeyboardInterrupt(
            f"experiment {ran.experiment_id} interrupted; continue it with "
            f"perflab.run(resume={ran.experiment_id})"
        )
    return Store(store).experiment(ran.experiment_id)
