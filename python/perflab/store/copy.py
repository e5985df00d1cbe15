"""Copying experiments between stores (`perflab store copy`): SQLite to PostgreSQL and back,
or between two of a kind.

An experiment is copied whole — its row, metric definitions, runs (status, attempts,
hosts, times), values, environments and artifacts (their compressed bytes as stored, in
their order) — as a new experiment of the destination, with new ids, in one transaction
of the destination: a copy that fails leaves nothing of that experiment there. The runner
lock is not copied (no process runs the copy). Artifacts are read in batches, so that an
experiment larger than memory copies too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import StoreError
from perflab.store.rows import Row, column_or_none
from perflab.store.schema import expected_columns

if TYPE_CHECKING:
    from perflab.store.db import Database

#: Artifacts read from the source at a time.
ARTIFACT_BATCH = 200

#: Columns that are not copied: ids (the destination gives new ones) and the runner lock.
_NOT_COPIED = {"id", "experiment_id", "run_id", "runner_pid", "runner_host"}


@dataclass(frozen=True)
class Copied:
    """What one experiment's copy wrote: its id in the destination, and how much."""

    source_id: int
    id: int
    runs: int
    values: int
    artifacts: int
    artifact_bytes: int  # as stored (compressed)


def copy_store(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    experiments: Sequence[str] = (),
    on_copied: Callable[[int, int, Copied], None] = lambda k, n, copied: None,
) -> list[Copied]:
    """Copy ``experiments`` (ids, names — the latest of that name — or ``last``; default
    every one, oldest first) of the store ``source`` into ``destination`` (made if it does
    not exist), one transaction each; ``on_copied(k, n, copied)`` after the k-th of n.

    The source is only read. The experiments are found before the destination is opened:
    one that is not there is an error that leaves the destination as it was."""
    from perflab.store.db import Database

    with Database(source, write=False) as src:
        if experiments:
            ids = list(dict.fromkeys(src.experiment(ref).id for ref in experiments))
        else:
            ids = sorted(e.id for e, _ in src.experiments())
        if not ids:
            return []
        with Database(destination, write=True) as dst:
            if _same(src.path, dst.path):
                raise StoreError(f"store {src.path}: cannot copy experiments into their own store")
            done = []
            for k, eid in enumerate(ids, 1):
                done.append(copy_experiment(src, dst, eid))
                on_copied(k, len(ids), done[-1])
            return done


def _same(a: object, b: object) -> bool:
    if isinstance(a, Path) and isinstance(b, Path):
        return a.resolve() == b.resolve()
    return a == b


def copy_experiment(src: Database, dst: Database, eid: int) -> Copied:
    """Experiment ``eid`` of ``src`` as a new experiment of ``dst`` (see the module's doc)."""
    with _reading(src):
        exp = src.db.execute("SELECT * FROM experiments WHERE id=?", (eid,)).fetchone()
        if exp is None:
            raise StoreError(f"no experiment '{eid}' in {src.path}", hint="see `perflab ls`")
        defs = src.db.execute(
            "SELECT * FROM metric_defs WHERE experiment_id=? ORDER BY position", (eid,)
        ).fetchall()
        runs = src.db.execute(
            "SELECT * FROM runs WHERE experiment_id=? ORDER BY order_index", (eid,)
        ).fetchall()
        values = src.db.execute(
            "SELECT r.order_index, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id"
            " WHERE r.experiment_id=?",
            (eid,),
        ).fetchall()
        envs = src.db.execute("SELECT * FROM environment WHERE experiment_id=?", (eid,)).fetchall()
    order_of = {r["id"]: r["order_index"] for r in runs}
    try:
        with dst.transaction():
            sql, (params,) = _insert("experiments", [exp], {})
            new = dst.backend.insert(sql, params)
            for table, rows in (("metric_defs", defs), ("runs", runs), ("environment", envs)):
                if rows:
                    dst.db.executemany(*_insert(table, rows, {"experiment_id": new}))
            run_ids = {
                r["order_index"]: r["id"]
                for r in dst.db.execute(
                    "SELECT id, order_index FROM runs WHERE experiment_id=?", (new,)
                )
            }
            dst.db.executemany(
                "INSERT INTO metrics (run_id, name, value) VALUES (?,?,?)",
                [(run_ids[v["order_index"]], v["name"], v["value"]) for v in values],
            )
            count, size = 0, 0
            for batch in _artifacts(src, eid):
                dst.db.executemany(
                    "INSERT INTO artifacts (experiment_id, run_id, host, name, size, data)"
                    " VALUES (?,?,?,?,?,?)",
                    [
                        (new, None if a["run_id"] is None else run_ids[order_of[a["run_id"]]],
                         a["host"], a["name"], a["size"], bytes(a["data"]))
                        for a in batch
                    ],
                )  # fmt: skip
                count += len(batch)
                size += sum(len(a["data"]) for a in batch)
    except dst.backend.errors as e:
        raise StoreError(
            f"store {dst.path}: cannot copy experiment {eid} of {src.path}: {dst.backend.detail(e)}"
        ) from e
    return Copied(eid, new, len(runs), len(values), count, size)


def _insert(table: str, rows: list[Row], fixed: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    """An INSERT into ``table`` of a store of this version, and its parameters for each of
    ``rows`` (read from a store of any version): every column but ids and the runner lock,
    ``fixed`` ones set."""
    columns = sorted(expected_columns()[table] - _NOT_COPIED) + sorted(fixed)
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})"
    return sql, [
        [fixed.get(c) if c in fixed else column_or_none(r, c) for c in columns] for r in rows
    ]


def _artifacts(src: Database, eid: int) -> Iterator[list[Row]]:
    """The experiment's artifacts in the order they were stored, `ARTIFACT_BATCH` at a time."""
    after = 0
    while True:
        with _reading(src):
            batch = src.db.execute(
                "SELECT id, run_id, host, name, size, data FROM artifacts"
                " WHERE experiment_id=? AND id > ? ORDER BY id LIMIT ?",
                (eid, after, ARTIFACT_BATCH),
            ).fetchall()
        if not batch:
            return
        yield batch
        after = batch[-1]["id"]


@contextlib.contextmanager
def _reading(src: Database) -> Iterator[None]:
    """A database error of the source as one line naming it."""
    try:
        yield
    except src.backend.errors as e:
        raise StoreError(f"cannot read store {src.path}: {src.backend.detail(e)}") from e
