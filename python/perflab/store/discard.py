"""Removing an experiment that never started a run: a spec stopped before its first run
(a misspelt labgrid place, a wrong address) is replaced by its corrected spec's new
experiment, so that a mistake leaves nothing in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.errors import StoreError

if TYPE_CHECKING:
    from perflab.store.db import Database

#: What holds an experiment, children first: ``DELETE FROM`` each, ``?`` its id (no
#: cascade: SQLite's foreign keys are not enforced).
_TABLES = (
    "metrics WHERE run_id IN (SELECT id FROM runs WHERE experiment_id=?)",
    *(f"{t} WHERE experiment_id=?" for t in ("artifacts", "environment", "runs", "metric_defs")),
    "experiments WHERE id=?",
)


def discard_unstarted(store: Database, eid: int) -> bool:
    """Removes experiment ``eid`` with all it holds if none of its runs started; returns
    whether it did (False: a run started, it stays)."""
    try:
        with store.transaction():
            started = store.db.execute(
                "SELECT count(*) AS n FROM runs WHERE experiment_id=? AND status != 'pending'",
                (eid,),
            ).fetchone()["n"]
            if started:
                return False
            for table in _TABLES:
                store.db.execute(f"DELETE FROM {table}", (eid,))
    except store.backend.errors as e:
        raise StoreError(
            f"store {store.path}: cannot discard experiment {eid}: {store.backend.detail(e)}"
        ) from e
    return True
