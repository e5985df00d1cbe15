"""A real PostgreSQL server on loopback for the tests (Debian's `postgresql`, which
scripts/setup installs): ``initdb`` into a temporary folder, ``pg_ctl start`` on a free
127.0.0.1 port with its socket in that folder, ready when ``pg_isready`` says so (polled,
with a deadline), stopped and removed at the end.

    with start_postgres() as pg:
        url = pg.new_database()      # postgresql://perflab@127.0.0.1:PORT/db1 (empty)

or, in a test, the fixtures ``postgres`` (the session's server) and ``pg_url`` (a new
empty database on it).

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user
(the package makes it), its folder given to that user. Connections are trusted on
loopback only (no password). A missing binary is a test failure, not a skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import LOOPBACK, free_port

READY_TIMEOUT_S = 30.0
SUPERUSER = "perflab"


def pg_program(name: str) -> str:
    """A PostgreSQL server program: Debian's newest /usr/lib/postgresql/N/bin/NAME (not on
    PATH there), else NAME on PATH."""
    versions = sorted(
        (p for p in glob.glob(f"/usr/lib/postgresql/*/bin/{name}") if Path(p).parts[-3].isdigit()),
        key=lambda p: int(Path(p).parts[-3]),
    )
    found = versions[-1] if versions else shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} not found: scripts/setup installs Debian's postgresql")
    return found


class Postgres:
    """A PostgreSQL server on 127.0.0.1:`port`, its data in `folder`."""

    def __init__(self, password: str | None = None) -> None:
        #: with a password: TCP connections authenticate with it (SCRAM), as a team's do
        self.password = password
        self.folder = Path(tempfile.mkdtemp(prefix="perflab-tests-pg-"))
        self.port = free_port()
        self._as: list[str] = []
        self._databases = 0
        if os.geteuid() == 0:  # postgres will not run as root
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self.data, self.log = self.folder / "data", self.folder / "server.log"

    def _run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as, *argv], capture_output=True, text=True, timeout=timeout, cwd=self.folder
        )

    def start(self) -> None:
        auth = ["--auth=trust"]
        if self.password is not None:
            pwfile = self.folder / "pwfile"
            pwfile.write_text(self.password + "\n")
            if self._as:
                owner = pwd.getpwnam("postgres")
                os.chown(pwfile, owner.pw_uid, owner.pw_gid)
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        init = self._run(
            pg_program("initdb"), "-D", str(self.data), "-U", SUPERUSER, *auth,
            "-E", "UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        assert init.returncode == 0, init.stderr
        self.restart()

    def restart(self) -> None:
        """Start the server on its data (after `crash`), and wait until it is ready."""
        # fsync off: what is committed survives a crash of the server (`crash`), not of the
        # machine, and the tests' commits do not wait for the disk
        options = (
            f"-c listen_addresses={LOOPBACK} -c port={self.port} -k {self.folder}"
            " -c fsync=off -c full_page_writes=off"
        )
        started = self._run(
            pg_program("pg_ctl"), "start", "-W", "-D", str(self.data), "-l", str(self.log),
            "-o", options,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        isready = pg_program("pg_isready")
        while True:
            r = self._run(
                isready, "-h", LOOPBACK, "-p", str(self.port), "-U", SUPERUSER, timeout=10
            )
            if r.returncode == 0:
                return
            if time.monotonic() > deadline:
                log = self.log.read_text() if self.log.exists() else ""
                raise RuntimeError(f"postgres not ready after {READY_TIMEOUT_S} s: {r.stdout}{log}")
            time.sleep(0.05)

    def crash(self) -> None:
        """Stop the server at once, as a crash would (its clients' connections drop)."""
        stopped = self._run(pg_program("pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate")
        assert stopped.returncode == 0, stopped.stderr

    def url(self, database: str, password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{SUPERUSER}{secret}@{LOOPBACK}:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        self._databases += 1
        name = f"db{self._databases}"
        with psycopg.connect(self.url("postgres", self.password), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if self.data.exists():
            self._run(pg_program("pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Postgres:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_postgres(password: str | None = None) -> Postgres:
    pg = Postgres(password)
    try:
        pg.start()
    except BaseException:
        pg.stop()
        raise
    return pg


# -- fixtures (tests/conftest.py loads this module as a plugin)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the test session (per xdist worker)."""
    with start_postgres() as pg:
        yield pg


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """The URL of a new, empty database on the session's server."""
    return postgres.new_database()
