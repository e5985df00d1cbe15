"""`perflab.run(spec)`: run an experiment as `perflab run` does — the same functions, from
opening (or continuing) the experiment to the runner — and get it back as an `Experiment`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.api.lab import Experiment
    from perflab.run.runner import Observer


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
) -> Experiment:
    """Execute the experiment file ``spec`` — or continue experiment ``resume`` — storing
    every run as it finishes, as `perflab run` does; returns the experiment as stored at
    the end (its ``status``, ``counts``, and ``.runs()`` / ``.compare()``).

    - ``store``: the results database (default: ``$PERFLAB_STORE``, else ``./perflab.db``);
    - the same spec again continues its unfinished experiment unless ``new``;
    - ``max_failures``: stop when N runs in a row, or the first N of a variant, fail the
      same way (default: the spec's; 0 never stops);
    - ``export``: comparison files (``.json``, ``.csv``, ``.md``) rewritten after every run;
    - ``observer``: progress events (a `perflab.run.runner.Observer`; default: none);
    - ``profile``: a perf profile of every measured phase, as `perflab run --profile`
      (True or "process": each phase's processes; "system": the whole host, also during
      kv phases).

    Failed runs do not raise: the experiment says how many (``failed``) and whether the
    failure policy stopped it (``status == "aborted"``). An interrupted run (Ctrl-C,
    SIGTERM) raises KeyboardInterrupt once the experiment is left resumable;
    ``perflab.run(resume=ID)`` continues it. A bad spec or option: a one-line
    `perflab.errors.PerflabError` before anything runs.
    """
    from perflab.api.lab import Store
    from perflab.report.output import ExportingObserver, ExportManager
    from perflab.run.experiment import open_experiment
    from perflab.run.runner import Runner, SilentObserver
    from perflab.spec import load_spec
    from perflab.store import Store as DbStore

    if (spec is None) == (resume is None):
        raise InputError("give an experiment file, or resume=ID")
    if max_failures is not None and (
        isinstance(max_failures, bool) or not isinstance(max_failures, int) or max_failures < 0
    ):
        raise InputError(f"max_failures must be a whole number ≥ 0 (got {max_failures!r})")
    loaded = load_spec(Path(spec)) if spec is not None else None
    exports = ExportManager(
        [Path(p) for p in export]
    )  # formats and paths checked before anything runs
    with DbStore(None if store is None else Path(store), write=True, create=resume is None) as db:
        opened = open_experiment(
            db, loaded, resume=None if resume is None else str(resume), new=new
        )
        watcher: Observer = observer if observer is not None else SilentObserver()
        if exports.paths:
            watcher = ExportingObserver(watcher, exports, db, opened.id)
        outcome = Runner(
            db,
            opened.spec,
            opened.id,
            observer=watcher,
            max_failures=max_failures,
            profile=profile,
        ).run()
        path = db.path
    if outcome.status == "interrupted":
        raise KeyboardInterrupt(
            f"experiment {opened.id} interrupted; continue it with perflab.run(resume={opened.id})"
        )
    return Store(path).experiment(opened.id)
