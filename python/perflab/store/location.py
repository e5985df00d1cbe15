"""Where a store is: a SQLite file (a path) or a PostgreSQL database (a URL).

Light (no database module imported): the CLI resolves ``--store`` while building nothing
else. An argument that looks like a URL (``scheme://…``) is a store of that kind or a
one-line error, never a file path: ``postgresql://u@h/db`` used to become the folders
``./postgresql:/u@h/``.

A URL that went through ``pathlib.Path`` on its way here (callers that take paths wrap
whatever they are given in one) lost a slash (``postgresql:/u@h/db``); it is read as the
URL it was.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath
from urllib.parse import SplitResult, urlsplit, urlunsplit

from perflab.errors import StoreError

#: The store when neither ``--store`` nor ``$PERFLAB_STORE`` names one.
DEFAULT_STORE = "perflab.db"

#: URL schemes of a PostgreSQL store (libpq's two spellings).
POSTGRES_SCHEMES = ("postgresql", "postgres")

#: ``scheme://`` (or ``scheme:/``, a URL a Path has normalised) at the start of an argument.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(//?)(.*)$", re.DOTALL)


class StoreURL:
    """A PostgreSQL store's address. ``str()`` is the URL without its password (for
    messages and the commands a report prints); `conninfo` is the URL as given, for libpq.

    Path-like where the code around stores expects a path: ``resolve()`` is itself and
    ``name`` is the database's name."""

    def __init__(self, url: str) -> None:
        self.conninfo = url
        parts = urlsplit(url)
        self._parts = parts
        self.display = urlunsplit(_without_password(parts))

    @property
    def name(self) -> str:
        return self._parts.path.lstrip("/") or (self._parts.username or "")

    def resolve(self) -> StoreURL:
        return self

    def __fspath__(self) -> str:
        return self.conninfo

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"StoreURL({self.display!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StoreURL) and other.conninfo == self.conninfo

    def __hash__(self) -> int:
        return hash(self.conninfo)


def _without_password(parts: SplitResult) -> SplitResult:
    """``parts`` with the password (in the user part or a ``password=`` parameter) masked."""
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if ":" in userinfo:
        parts = parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***{at}{hostport}")
    return parts._replace(query=re.sub(r"(^|&)password=[^&]*", r"\1password=***", parts.query))


def store_location(where: str | os.PathLike[str] | None) -> Path | StoreURL:
    """The store ``where`` names: None is $PERFLAB_STORE, else ./perflab.db; a PostgreSQL URL
    is a `StoreURL`; anything else URL-like is a StoreError (one line); the rest is a path."""
    if isinstance(where, StoreURL):
        return where
    if where is None:
        where = os.environ.get("PERFLAB_STORE") or DEFAULT_STORE
    text = os.fspath(where)
    if "\x00" in text:
        raise StoreError(f"store {text!r}: a path cannot hold a NUL byte")
    m = _URL.match(text)
    if m is None or (m.group(2) == "/" and not isinstance(where, PurePath)):
        return Path(where)
    scheme, rest = m.group(1), m.group(3)
    url = f"{scheme}://{rest}"
    if scheme.lower() not in POSTGRES_SCHEMES:
        raise StoreError(
            f"store {url}: unknown kind of store {scheme + '://'!r}",
            hint="a store is a SQLite file path or postgresql://USER@HOST[:PORT]/DATABASE",
        )
    try:
        urlsplit(url).port  # noqa: B018 (a bad port raises here, not deep in libpq)
    except ValueError as e:
        reason = str(e)
        raise StoreError(f"store {StoreURL(url)}: {reason[:1].lower()}{reason[1:]}") from None
    return StoreURL(url)


def default_store_path() -> Path | StoreURL:
    """``$PERFLAB_STORE`` read as ``--store`` is (a file, or a PostgreSQL URL: one parsing
    for both), else ``./perflab.db``."""
    return store_location(None)
