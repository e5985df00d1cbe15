"""The SQLite store (the embedded default): one file in WAL mode, opened and checked by
`perflab.store.connect`; transactions are ``BEGIN IMMEDIATE`` (the file's write lock, so
that one process writes at a time); the hot reads are Rust's (`crates/store`, through
`perflab._native`), on a second, read-only connection with the URI of this one."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from perflab.store.connect import BUSY_TIMEOUT, connect
from perflab.store.dialect import Holder
from perflab.store.faults import detail

if TYPE_CHECKING:
    from perflab.store.dialect import RawCells, RawValues


class SqliteBackend:
    """The SQLite store at ``path`` (`perflab.store.dialect.Backend`)."""

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    for_update = ""  # BEGIN IMMEDIATE holds the whole file

    def __init__(self, path: Path, *, write: bool, create: bool) -> None:
        self.db, self.uri = connect(path, write=write, create=create)
        self.db.row_factory = sqlite3.Row  # results are read by column name

    def detail(self, e: Exception) -> str:
        assert isinstance(e, sqlite3.Error)
        return detail(e)

    def transaction(self) -> _Transaction:
        return _Transaction(self.db)

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        rowid = self.db.execute(sql, parameters).lastrowid
        assert rowid is not None  # set by the INSERT just executed
        return rowid

    def claim(self, eid: int, pid: int, host: str) -> Holder | None:
        """The lock is the row's runner_pid and runner_host: a live process of this host
        holds it (one of another host cannot be checked from here, and is taken over)."""
        with self.transaction():
            row = self.db.execute(
                "SELECT runner_pid, runner_host FROM experiments WHERE id=?", (eid,)
            ).fetchone()
            holder_pid, holder_host = row["runner_pid"], row["runner_host"]
            if holder_pid and holder_pid != pid and holder_host == host and _alive(holder_pid):
                return Holder(holder_pid, holder_host)
            self.db.execute(
                "UPDATE experiments SET runner_pid=?, runner_host=? WHERE id=?", (pid, host, eid)
            )
        return None

    def release(self, eid: int) -> None:
        self.db.execute("UPDATE experiments SET runner_pid=NULL WHERE id=?", (eid,))

    def runner_alive(self, eid: int) -> bool | None:
        """A live process of this host in the row; one of another host cannot be checked."""
        import socket

        row = self.db.execute(
            "SELECT runner_pid, runner_host FROM experiments WHERE id=?", (eid,)
        ).fetchone()
        if row is None or not row["runner_pid"]:
            return False
        if row["runner_host"] not in (None, socket.gethostname()):
            return None
        return _alive(row["runner_pid"])

    def experiment_values(self, eid: int) -> tuple[RawValues, RawCells]:
        from perflab import _native

        return _native.experiment_values(self.uri, eid, BUSY_TIMEOUT * 1000)

    def measured_values(self, eid: int) -> RawValues:
        from perflab import _native

        return _native.measured_values(self.uri, eid, BUSY_TIMEOUT * 1000)

    def cells_and_variants(self, eid: int) -> RawCells:
        from perflab import _native

        return _native.cells_and_variants(self.uri, eid, BUSY_TIMEOUT * 1000)

    def close(self) -> None:
        self.db.close()


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back whole if anything (the COMMIT included) fails.

    SQLite may already have rolled back after a full disk or I/O error; then there is
    nothing to undo, and the original error is the one raised.
    """

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except BaseException:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised says what failed; SQLite undoes it on close regardless


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
