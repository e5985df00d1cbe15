"""A team's store password is never shown or kept: a real PostgreSQL server that checks
passwords (SCRAM on loopback, tests/pg.py), a password planted in the ``--store`` URL, in
``$PERFLAB_STORE`` and in ``PGPASSWORD``; every command's output, every file it writes
and every row of the store are searched for it. ``$PERFLAB_STORE`` and ``--store`` name
one store the same way (the dry run of either finds the earlier runs)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_helpers import perflab, write_spec
from pg import SUPERUSER, pg_program, start_postgres
from servers import LOOPBACK

pytestmark = [pytest.mark.server]

#: The planted secret: unlike anything else a command prints.
SECRET = "s3cret-PLANTED-pw-7f2a"

SPEC = """\
name = "secrets"
baseline = "a"
repetitions = 2

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
command = "echo work"

[[metric]]
name = "wall_time"
better = "lower"
"""


@pytest.fixture(scope="module")
def server():
    with start_postgres(password=SECRET) as pg:
        yield pg


def _assert_clean(text: str | bytes, what: object) -> None:
    data = text.encode() if isinstance(text, str) else text
    assert SECRET.encode() not in data, f"the password is in {what}"


def _dump(server, database: str) -> bytes:
    """Every row of the store's database, as pg_dump writes it."""
    done = subprocess.run(
        [pg_program("pg_dump"), "-h", LOOPBACK, "-p", str(server.port), "-U", SUPERUSER,
         "--data-only", database],
        capture_output=True, env={"PGPASSWORD": SECRET, "PATH": "/usr/bin:/bin"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_command_shows_or_keeps_the_store_password(server, tmp_path, monkeypatch):
    url = server.new_database()  # postgresql://perflab@127.0.0.1:PORT/dbN
    secret_url = url.replace(f"{SUPERUSER}@", f"{SUPERUSER}:{SECRET}@")
    database = url.rsplit("/", 1)[1]
    spec = write_spec(tmp_path, SPEC)
    monkeypatch.delenv("PERFLAB_STORE", raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    outputs: list[tuple[object, str]] = []

    def run(*argv: str, code: int = 0) -> str:
        r = perflab(*argv)
        assert r.code == code, (argv, r.err)
        outputs.append((argv, r.out + r.err))
        return r.out + r.err

    # the password in the URL
    said = run("run", str(spec), "--dry-run", "--store", secret_url)
    assert f"{SUPERUSER}:***@{LOOPBACK}" in said, said
    run("run", str(spec), "--store", secret_url)
    report, csv, copy = tmp_path / "r.html", tmp_path / "e.csv", tmp_path / "copy.db"
    for argv in (
        ["ls"], ["ls", "--json"], ["show", "1"], ["show", "1", "--json"], ["show", "1", "--runs"],
        ["show", "1", "--run", "1"], ["compare", "1"], ["compare", "1", "--json"],
        ["compare", "1", "--format", "markdown"], ["report", "1", "-o", str(report)],
        ["export", "1", "-o", str(csv)], ["history", "secrets"],
    ):  # fmt: skip
        run(*argv, "--store", secret_url)
    run("store", "copy", secret_url, str(copy))
    run("store", "copy", str(copy), secret_url)
    # the same URL through $PERFLAB_STORE: the same store, masked the same way
    monkeypatch.setenv("PERFLAB_STORE", secret_url)
    said = run("run", str(spec), "--dry-run")
    assert f"postgresql://{SUPERUSER}:***@{LOOPBACK}" in said, said
    assert "no earlier runs" not in said and "earlier" in said, said
    run("ls")
    monkeypatch.delenv("PERFLAB_STORE")
    # the password in PGPASSWORD, the URL without one: libpq takes it, nobody shows it
    monkeypatch.setenv("PGPASSWORD", SECRET)
    run("run", str(spec), "--store", url)
    run("show", "last", "--store", url)
    monkeypatch.delenv("PGPASSWORD")
    # a wrong password and a wrong database: said, the password tried never shown
    wrong = secret_url.replace(SECRET, SECRET + "-wrong")
    said = run("ls", "--store", wrong, code=2)
    assert "password authentication failed" in said, said
    said = run("ls", "--store", secret_url.rsplit("/", 1)[0] + "/nosuchdb", code=2)
    assert "nosuchdb" in said, said
    said = run("ls", "--store", url.rsplit("/", 1)[0] + "/nosuchdb", code=2)  # no password
    assert f"asks user {SUPERUSER} for a password to database nosuchdb" in said, said

    for argv, text in outputs:
        _assert_clean(text, argv)
    for path in (report, csv, copy):
        _assert_clean(path.read_bytes(), path)
    with sqlite3.connect(copy) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            _assert_clean(
                json.dumps(db.execute(f"SELECT * FROM {table}").fetchall(), default=str), table
            )
    _assert_clean(_dump(server, database), f"the database {database}")


def test_perflab_store_and_store_option_are_one_parsing(tmp_path, monkeypatch):
    """No server needed: the dry run's line naming the store is the same for both."""
    from perflab.store.location import StoreURL, default_store_path, store_location

    url = f"postgresql://u:{SECRET}@127.0.0.1:1/db"
    monkeypatch.setenv("PERFLAB_STORE", url)
    env, given = default_store_path(), store_location(url)
    assert isinstance(env, StoreURL) and env == given
    assert str(env) == "postgresql://u:***@127.0.0.1:1/db" == str(given)
    assert env.conninfo == url  # what libpq gets: the URL as written
    monkeypatch.setenv("PERFLAB_STORE", str(tmp_path / "x.db"))
    assert default_store_path() == Path(tmp_path / "x.db")
