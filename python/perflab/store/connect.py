"""Opening a store's SQLite connection: for reading (writes nothing) or for writing.

Reading never creates the store; it opens read-write with ``query_only`` when it may
write there (so SQLite removes the -wal/-shm files it made when it closes), read-only
otherwise, and ``immutable`` when even the -shm file cannot be made (read-only folder).
Writing opens an existing store for reading first: its schema is checked before a
writing connection touches it, so a damaged, foreign or newer store is refused as it
is, never "repaired".
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from perflab.errors import StoreError
from perflab.store import files
from perflab.store.faults import detail
from perflab.store.schema import SCHEMA_VERSION, checked_version, upgrade

BUSY_TIMEOUT = 30  # seconds to wait for another process's write to finish


def connect(path: Path, *, write: bool, create: bool = True) -> tuple[sqlite3.Connection, str]:
    """A connection to the checked store at ``path``, and the SQLite URI it was opened with
    (a second, read-only connection opens the same way); StoreError (one line) if it cannot
    serve.

    An existing store is checked through a reading connection first, so that a damaged
    one is refused before a writing connection could checkpoint into it.
    """
    if files.check_location(path, write=write, create=create):
        files.check_header(path, write=write)
        reader = _open_for_reading(path) if path.stat().st_size else None
        if not write:
            assert reader is not None  # check_header refuses an empty file to a reader
            return _checked(reader[0], path, new_ok=False), reader[1]
        if reader is not None:
            _checked(reader[0], path, new_ok=True).close()
    db = _open_for_writing(path)
    with _closed_on_error(db, path):
        if _check_schema(db, path) < SCHEMA_VERSION:
            _upgrade(db, path)
        db.execute("PRAGMA journal_mode=WAL")
    return db, _uri(path)


def _uri(path: Path) -> str:
    return "file:" + quote(str(path.absolute()))


@contextlib.contextmanager
def _closed_on_error(db: sqlite3.Connection, path: Path) -> Iterator[None]:
    """Close ``db`` if the block fails; an SQLite error becomes one StoreError line."""
    try:
        yield
    except sqlite3.Error as e:
        db.close()
        raise StoreError(f"cannot open store {path}: {detail(e)}") from e
    except BaseException:
        db.close()
        raise


def _checked(db: sqlite3.Connection, path: Path, *, new_ok: bool) -> sqlite3.Connection:
    """``db`` if it holds a perflab store (or no tables at all, when ``new_ok``); closed otherwise."""
    with _closed_on_error(db, path):
        if not _check_schema(db, path) and not new_ok:
            raise StoreError(
                f"store {path} is not a perflab store (an SQLite database with no tables)"
            )
    return db


def _open_for_writing(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db
    except sqlite3.Error as e:
        raise StoreError(f"cannot open store {path}: {detail(e)}") from e


def _open_for_reading(path: Path) -> tuple[sqlite3.Connection, str]:
    uri = _uri(path)
    modes = ["?mode=ro"]
    if files.writable(path) and not files.wal_has_frames(path):
        # read-write + query_only: removes the -wal/-shm files it made when it closes; not
        # with a -wal to merge, as closing would then write (checkpoint) into the store
        modes.insert(0, "")
    if not files.wal_has_frames(path):
        modes.append("?mode=ro&immutable=1")  # nothing to read beyond the main file
    error: sqlite3.Error | None = None
    for mode in modes:
        db = None
        try:
            db = sqlite3.connect(uri + mode, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
            db.execute("PRAGMA query_only=ON")
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the -shm (WAL) now
            return db, uri + mode
        except sqlite3.Error as e:
            if db is not None:
                db.close()
            if _damaged(e):
                raise StoreError(f"store {path} is damaged: {e}") from e
            if not _errorname(e).startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")):
                raise StoreError(f"cannot read store {path}: {detail(e)}") from e
            error = e  # cannot make the -wal/-shm files here: try the next, more modest mode
    assert error is not None
    if files.wal_has_frames(path):
        raise StoreError(
            f"cannot read store {path}: its folder {files.folder(path)} is read-only and "
            f"{path.name}-wal holds changes not yet merged ({detail(error)})"
        ) from error
    raise StoreError(f"cannot read store {path}: {detail(error)}") from error


def _check_schema(db: sqlite3.Connection, path: Path) -> int:
    """The version of a perflab store this perflab reads, 0 for a database with no tables (a
    new store); StoreError for anything else (`schema.checked_version`)."""
    try:
        tables = {t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as e:
        if _damaged(e):
            raise StoreError(f"store {path} is damaged: {e}") from e
        raise

    def version() -> object:
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:  # a 'meta' table of someone else's
            raise LookupError from None
        if row is None:
            raise LookupError
        return row[0]

    def columns(table: str) -> set[str]:
        return {c[1] for c in db.execute(f"PRAGMA table_info({table})")}

    return checked_version(f"store {path}", "an SQLite database", tables, version, columns)


def _upgrade(db: sqlite3.Connection, path: Path) -> None:
    """A new store's tables, or an older store's migrations (`schema.upgrade`), in one
    transaction; the version is read again inside it, so that of two processes opening the
    store at once one upgrades it and the other finds it done."""
    db.execute("PRAGMA journal_mode=WAL")
    try:
        db.execute("BEGIN IMMEDIATE")
        version = _check_schema(db, path)
        for sql in upgrade(version) if version < SCHEMA_VERSION else []:
            db.execute(sql)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised is the one to report
        raise


def _errorname(e: sqlite3.Error) -> str:
    return getattr(e, "sqlite_errorname", "") or ""


def _damaged(e: sqlite3.Error) -> bool:
    return _errorname(e) in ("SQLITE_CORRUPT", "SQLITE_NOTADB")
