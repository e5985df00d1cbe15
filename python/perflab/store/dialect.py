"""What `perflab.store.db.Store` asks of a database: one small interface, `Backend`, with
one implementation per kind of store (`sqlite_backend`, `postgres_backend`).

The Store writes its SQL once, with ``?`` placeholders, in the dialect both kinds speak
(``INSERT … ON CONFLICT … DO UPDATE``, ``CAST``); what they do not share is here: how an
id comes back from an INSERT, how a transaction starts and locks, how an experiment's
runner lock is held, how the hot reads are done, and how an error is worded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol

#: An experiment's measured values as the hot read hands them over: (keys, offsets, values,
#: blocks) — group g is ``[offsets[g], offsets[g + 1])`` of values (float64) and blocks
#: (int64); offsets are uint64; native byte order (`perflab.store.grouped.Grouped`).
RawValues = tuple[list[tuple[str, str, str]], bytes, bytes, bytes]


#: Its distinct (cell_key, cell JSON, variant) in order of first appearance, and its runs
#: per status in byte order of the status.
class Holder(NamedTuple):
    """Who holds an experiment's runner lock: a process on a host."""

    pid: int
    host: str


RawCells = tuple[list[tuple[str, str, str]], list[tuple[str, int]]]


class Cursor(Protocol):
    """The rows of a statement; each row is read by column name (``row["id"]``)."""

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection in autocommit mode, taking ``?`` placeholders (sqlite3's own)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...
    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> object: ...
    def close(self) -> None: ...


class Backend(Protocol):
    """An open store of one kind."""

    @property
    def db(self) -> Connection:
        """The connection the Store's SQL runs on."""
        ...

    #: The exceptions its driver raises (the Store words them with `detail`).
    errors: tuple[type[Exception], ...]
    #: Appended to a SELECT, in a transaction, that reads a row to change it: a row lock
    #: where another process could change it in between (PostgreSQL), else nothing.
    for_update: str

    def detail(self, e: Exception) -> str:
        """The driver's error ``e`` in words a user can act on."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """One transaction: committed at the end of the block, rolled back whole if it fails;
        it holds the store's write lock (SQLite) or what it changes (PostgreSQL)."""
        ...

    def insert(self, sql: str, parameters: Sequence[Any]) -> int:
        """Run an INSERT of one row into a table with an ``id`` column; its new id."""
        ...

    def claim(self, eid: int, pid: int, host: str) -> Holder | None:
        """Take experiment ``eid``'s runner lock for process ``pid`` on ``host`` (and record
        them in the experiment's row); the holder when another live process has it."""
        ...

    def release(self, eid: int) -> None:
        """Give the runner lock of ``eid`` back (and clear its row's runner_pid)."""
        ...

    def runner_alive(self, eid: int) -> bool | None:
        """Whether a runner holds ``eid``'s lock now (None: it cannot be told from here)."""
        ...

    def experiment_values(self, eid: int) -> tuple[RawValues, RawCells]:
        """`measured_values` and `cells_and_variants` in one pass (a thread may call it)."""
        ...

    def measured_values(self, eid: int) -> RawValues: ...
    def cells_and_variants(self, eid: int) -> RawCells: ...
    def close(self) -> None: ...
