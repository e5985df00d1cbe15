"""Schema of the results store, with its version, migrations and change log.

Written once, in SQLite's dialect; the PostgreSQL store translates it
(`perflab.store.postgres_schema`), so both kinds hold the same tables and columns. A new
store is made as version 1 (`DDL`) and brought up by the same `MIGRATIONS` that bring an
older store up to date: there is one way to reach each version.

`expected_columns` is what an opened store of a version must hold: checked on open, so a
damaged or foreign database is refused instead of being written into.

Change log:
  1 — experiments, runs (planned up front, status per run), metrics in long form,
      environment per host, artifacts (zlib-compressed blobs).
  2 — experiments.user_name and experiments.controller_host: who ran it, from which
      machine (stores shared by a team); NULL for experiments stored before.
  3 — experiments.version, experiments.source_commit and experiments.source_repo: its
      place in a series of versions (`perflab history`) and the source it was built from;
      NULL when not given and for experiments stored before.
"""

import functools
import sqlite3
from collections.abc import Callable

from perflab.errors import StoreError

SCHEMA_VERSION = 4

#: Version → the statements that bring a store of the version before up to it.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (
        "ALTER TABLE experiments ADD COLUMN user_name TEXT",
        "ALTER TABLE experiments ADD COLUMN controller_host TEXT",
    ),
    3: (
        "ALTER TABLE experiments ADD COLUMN version TEXT",
        "ALTER TABLE experiments ADD COLUMN source_commit TEXT",
        "ALTER TABLE experiments ADD COLUMN source_repo TEXT",
    ),
    4: ("ALTER TABLE runs ADD COLUMN device TEXT",),  # a pool's device it ran on: NAME[SLOT]
}

DDL = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS experiments (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    source       TEXT NOT NULL,              -- 'run' | 'import'
    spec_path    TEXT,
    spec_text    TEXT,
    spec_sha256  TEXT,
    baseline     TEXT NOT NULL,
    settings     TEXT NOT NULL,              -- JSON: params, variants, order, seed, confidence, ...
    status       TEXT NOT NULL,              -- running | interrupted | aborted | complete
    created_at   REAL NOT NULL,              -- unix seconds
    finished_at  REAL,
    runner_pid   INTEGER,                    -- process currently executing it (lock)
    runner_host  TEXT
);
CREATE TABLE IF NOT EXISTS metric_defs (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    name          TEXT NOT NULL,
    unit          TEXT NOT NULL DEFAULT '',
    better        TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
    PRIMARY KEY (experiment_id, name)
);
CREATE TABLE IF NOT EXISTS runs (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    order_index   INTEGER NOT NULL,
    block         INTEGER NOT NULL,
    cell_key      TEXT NOT NULL,
    cell          TEXT NOT NULL,             -- JSON {param: label}
    variant       TEXT NOT NULL,
    repetition    INTEGER NOT NULL,
    warmup        INTEGER NOT NULL DEFAULT 0,
    status        TEXT NOT NULL,             -- pending | running | ok | failed | timeout
    reason        TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0,
    host          TEXT,
    started_at    REAL,
    ended_at      REAL,
    pid           INTEGER,                   -- process group of the command in flight
    pid_start     TEXT,                      -- its start time, to recognise it after a crash
    UNIQUE (experiment_id, order_index)
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (experiment_id, status, order_index);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    value  REAL NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS environment (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    host          TEXT NOT NULL,
    captured_at   REAL NOT NULL,
    info          TEXT NOT NULL,             -- JSON
    PRIMARY KEY (experiment_id, host)
);
CREATE TABLE IF NOT EXISTS artifacts (
    id            INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    run_id        INTEGER REFERENCES runs(id) ON DELETE CASCADE,
    host          TEXT,
    name          TEXT NOT NULL,             -- e.g. 'stdout:access', 'proc/cpuinfo'
    size          INTEGER NOT NULL,          -- uncompressed bytes
    data          BLOB NOT NULL              -- zlib
);
CREATE INDEX IF NOT EXISTS artifacts_by_run ON artifacts (run_id);
CREATE INDEX IF NOT EXISTS artifacts_by_experiment ON artifacts (experiment_id, run_id);
"""


def statements(script: str) -> list[str]:
    """The statements of a script of ours (each ends a line with ``;``; no ``;`` elsewhere)."""
    return [s.strip() for s in script.split(";\n") if s.strip()]


def upgrade(version: int) -> list[str]:
    """The statements that make a store of ``version`` (0: a database without tables) one of
    `SCHEMA_VERSION`; run in one transaction, by one process at a time."""
    out = statements(DDL) if version == 0 else []
    out += migrations(max(version, 1))
    if version == 0:
        out.append(f"INSERT INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')")
    else:
        out.append(f"UPDATE meta SET value='{SCHEMA_VERSION}' WHERE key='schema_version'")
    return out


def migrations(since: int, until: int = SCHEMA_VERSION) -> list[str]:
    """The statements that bring a store of version ``since`` to ``until``, in order."""
    return [sql for v in range(since + 1, until + 1) for sql in MIGRATIONS[v]]


@functools.cache
def expected_columns(version: int = SCHEMA_VERSION) -> dict[str, frozenset[str]]:
    """Table -> column names of a store of ``version`` (built from DDL and the migrations, so
    never out of date)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(DDL)
        for sql in migrations(1, version):
            db.execute(sql)
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: frozenset(c[1] for c in db.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        db.close()


def checked_version(
    store: str,
    kind: str,
    tables: set[str],
    version: Callable[[], object],
    columns: Callable[[str], set[str]],
) -> int:
    """The schema version of a database holding ``tables`` if it is a perflab store this
    perflab reads (0: no tables at all, a new store); else a StoreError saying what it is.

    ``store`` names it in messages ("store PATH"), ``kind`` says what it is ("an SQLite
    database"); ``version()`` reads the stored version (LookupError: there is none, or the
    'meta' table is someone else's); ``columns(table)`` names a table's columns."""
    if not tables:
        return 0
    foreign = StoreError(f"{store} is not a perflab store ({kind} without perflab's tables)")
    if "meta" not in tables:
        raise foreign
    try:
        value = version()
    except LookupError:
        raise foreign from None
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        raise StoreError(
            f"{store} is damaged: its schema version {value!r} is not a number"
        ) from None
    if number > SCHEMA_VERSION:
        raise StoreError(
            f"{store} has schema {number}, newer than this perflab ({SCHEMA_VERSION})",
            hint="upgrade perflab",
        )
    if number < 1:
        raise StoreError(f"{store} is damaged: its schema version is {number}")
    for table, expected in expected_columns(number).items():
        if table not in tables:
            raise StoreError(f"{store} is damaged: table {table} is missing")
        missing = expected - columns(table)
        if missing:
            raise StoreError(
                f"{store} is damaged: table {table} lacks column(s) " + ", ".join(sorted(missing))
            )
    return number  # older than SCHEMA_VERSION: a writer migrates it (`upgrade`)
