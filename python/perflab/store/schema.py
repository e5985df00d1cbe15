"""SQLite schema of the results store, with its version and change log.

`expected_columns` is what an opened store must hold: checked on open, so a damaged or
foreign database is refused instead of being written into.

Change log:
  1 — experiments, runs (planned up front, status per run), metrics in long form,
      environment per host, artifacts (zlib-compressed blobs).
"""

import functools
import sqlite3

SCHEMA_VERSION = 1

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


@functools.cache
def expected_columns() -> dict[str, frozenset[str]]:
    """Table -> column names of a store of this version (built from DDL, so never out of date)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(DDL)
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: frozenset(c[1] for c in db.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        db.close()
