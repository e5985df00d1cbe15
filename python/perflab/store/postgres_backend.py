"""The PostgreSQL store (a team's: many perflab processes, on many machines, write to it
at once), through psycopg 3.

- Ids come from identity columns: each INSERT gets its own, whoever else inserts.
- A transaction is PostgreSQL's own (READ COMMITTED); a row read in order to change it is
  locked (``SELECT … FOR UPDATE``), so two writers never lose each other's change.
- An experiment's runner lock is a session-level advisory lock (``pg_advisory_lock``,
  waited for `LOCK_WAIT_S` at most): held by the runner's connection, it is released by the
  server when that connection ends — a controller killed, or its machine gone once TCP
  keepalives notice — so a resume on any machine can take it over, and never while the
  runner lives.
- A command that only reads sets ``default_transaction_read_only``: it cannot write.
- Errors are worded as SQLite's are: one line naming the store (its URL without the
  password) and what failed: ``cannot reach store postgresql://…: connection refused``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import psycopg

from perflab.errors import StoreError
from perflab.store import postgres_reads, postgres_schema
from perflab.store.dialect import Holder, RawCells, RawValues
from perflab.store.location import StoreURL
from perflab.store.postgres_connection import PgConnection, connect, first_line, pg_transaction
from perflab.store.postgres_schema import LOCK_KEY

#: How long taking an experiment's runner lock waits for a session that holds it to end.
LOCK_WAIT_S = 2.0


class PostgresBackend:
    """The PostgreSQL store at ``url`` (`perflab.store.dialect.Backend`)."""

    errors: tuple[type[Exception], ...] = (psycopg.Error,)
    for_update = " FOR UPDATE"

    def __init__(self, url: StoreURL, *, write: bool, create: bool) -> None:
        self.url = url
        self._held: set[int] = set()  # experiments whose runner lock this session holds
        self.db = PgConnection(connect(url))
        try:
            self._check(write=write, create=create)
        except BaseException:
            self.db.close()
            raise

    def _check(self, *, write: bool, create: bool) -> None:
        store = f"store {self.url}"
        try:
            version = postgres_schema.check(self.db, store)
            if version == 0 and not (write and create):
                raise postgres_schema.missing(str(self.url), self.url.name)
            if write:
                postgres_schema.make_current(self.db, store, version)
            else:  # reading commands change nothing
                self.db.execute("SET default_transaction_read_only = on")
        except psycopg.Error as e:
            raise StoreError(f"cannot open {store}: {self.detail(e)}") from e

    def detail(self, e: Exception) -> str:
        """The server's message (its primary line), or why the connection is gone."""
        if self.db.conn.broken or self.db.conn.closed:
            return f"the connection to the server was lost ({first_line(e)})"
        diag = getattr(e, "diag", None)
        primary = diag.message_primary if diag is not None else None
        return primary or first_line(e)

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return pg_transaction(self.db)

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        row = self.db.execute(sql + " RETURNING id", parameters).fetchone()
        return int(row["id"])

    def claim(self, eid: int, pid: int, host: str) -> Holder | None:
        """The lock is an advisory lock of this connection's session. A session that has
        just ended (a runner killed a moment ago) may still hold it while the server cleans
        up: waited for, `LOCK_WAIT_S` at most, before the holder is named."""
        if eid not in self._held:
            try:
                with pg_transaction(self.db):
                    self.db.execute(f"SET LOCAL lock_timeout = '{round(LOCK_WAIT_S * 1000)}ms'")
                    self.db.execute(
                        "SELECT pg_advisory_lock(CAST(? AS INTEGER), CAST(? AS INTEGER))",
                        (LOCK_KEY, eid),
                    )
            except psycopg.errors.LockNotAvailable:  # another session holds it: a live runner
                row = self.db.execute(
                    "SELECT runner_pid, runner_host FROM experiments WHERE id=?", (eid,)
                ).fetchone()
                return (
                    Holder(row["runner_pid"] or 0, row["runner_host"] or "?")
                    if row
                    else Holder(0, "?")
                )
            self._held.add(eid)
        self.db.execute(
            "UPDATE experiments SET runner_pid=?, runner_host=? WHERE id=?", (pid, host, eid)
        )
        return None

    def release(self, eid: int) -> None:
        self.db.execute("UPDATE experiments SET runner_pid=NULL WHERE id=?", (eid,))
        if eid in self._held:
            self._held.discard(eid)
            self.db.execute(
                "SELECT pg_advisory_unlock(CAST(? AS INTEGER), CAST(? AS INTEGER))",
                (LOCK_KEY, eid),
            )

    def runner_alive(self, eid: int) -> bool | None:
        """Some session holds ``eid``'s advisory lock (the server drops it with the
        session of a runner that is gone)."""
        row = self.db.execute(
            "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND classid = CAST(? AS oid) AND objid = CAST(? AS oid) AND objsubid = 2",
            (LOCK_KEY, eid),
        ).fetchone()
        return bool(row["n"])

    def experiment_values(self, eid: int) -> tuple[RawValues, RawCells]:
        return self.measured_values(eid), self.cells_and_variants(eid)

    def measured_values(self, eid: int) -> RawValues:
        return postgres_reads.measured_values(self.db, eid)

    def cells_and_variants(self, eid: int) -> RawCells:
        return postgres_reads.cells_and_variants(self.db, eid)

    def close(self) -> None:
        self.db.close()
