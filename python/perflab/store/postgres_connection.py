"""A connection to a PostgreSQL store (psycopg 3): made with perflab's settings, taking
the Store's ``?`` placeholders, its transactions, and libpq's failure to connect worded in
one line (``connection refused``)."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

from perflab.errors import StoreError
from perflab.store.dialect import Connection, Cursor
from perflab.store.location import StoreURL

#: Connection settings perflab asks for unless the URL says otherwise: give up connecting
#: after 10 s; notice a dead peer within ~1 min (the server then ends the session and frees
#: its runner lock).
CONNECTION_DEFAULTS = {
    "connect_timeout": "10",
    "application_name": "perflab",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}


class PgConnection:
    """A psycopg connection (autocommit, rows as dicts) taking the Store's ``?`` placeholders."""

    def __init__(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        if not parameters:
            return self.conn.execute(sql)
        return self.conn.execute(_placeholders(sql), parameters)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_placeholders(sql), parameters)

    def close(self) -> None:
        self.conn.close()


@functools.lru_cache(maxsize=512)
def _placeholders(sql: str) -> str:
    """``?`` → ``%s`` (a literal ``%`` doubled). The Store's SQL has no ``?`` in a string."""
    return sql.replace("%", "%%").replace("?", "%s")


@contextlib.contextmanager
def pg_transaction(db: Connection) -> Iterator[None]:
    """One transaction on ``db`` (a `PgConnection`): committed at the end of the block,
    rolled back whole if anything in it (or the commit) fails."""
    assert isinstance(db, PgConnection)
    with db.conn.transaction():
        yield


def connect(url: StoreURL) -> psycopg.Connection[dict[str, Any]]:
    """A connection to ``url``, with `CONNECTION_DEFAULTS` where the URL sets nothing; a
    StoreError (one line) when the server cannot be reached or refuses us."""
    try:
        params = {**CONNECTION_DEFAULTS, **conninfo_to_dict(url.conninfo)}
    except psycopg.Error as e:
        raise StoreError(f"store {url} is not a valid PostgreSQL URL: {first_line(e)}") from None
    try:
        return psycopg.connect(make_conninfo("", **params), autocommit=True, row_factory=dict_row)
    except psycopg.Error as e:
        reason = reach_error(e)
        if "no password supplied" in reason:  # pg_hba asked for one: often a wrong database
            who = params.get("user") or os.environ.get("PGUSER") or "(your login name)"
            reason = (
                f"the server asks user {who} for a password to database "
                f"{params.get('dbname') or who} and none was given (in the URL, PGPASSWORD "
                "or ~/.pgpass); check the database's and the user's names too"
            )
        raise StoreError(f"cannot reach store {url}: {reason}") from None


def reach_error(e: Exception) -> str:
    """libpq's reason for a failed connection, without its preamble: ``connection refused``,
    ``password authentication failed for user "x"``, ``database "y" does not exist``."""
    line = first_line(e)
    for preamble in ("connection failed: ", "failed: "):
        if preamble in line:
            line = line.rsplit(preamble, 1)[1]
    line = line.removeprefix("FATAL:").strip()
    if line[:1].isupper() and line[1:2].islower():  # "Connection refused" (strerror)
        line = line[0].lower() + line[1:]
    return line or type(e).__name__


def first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0].strip() if text else type(e).__name__
