"""Database errors of an open store as one-line StoreErrors naming the store and the operation.

A full disk or an I/O error mid-experiment (or a PostgreSQL server gone) must say which
store and what was not saved, not surface as ``sqlite3.OperationalError`` or
``psycopg.OperationalError`` with a traceback. The decorated methods are the Store's: its
backend says which exceptions are its driver's and words them
(`perflab.store.dialect.Backend`).
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar, cast

from perflab.errors import StoreError

F = TypeVar("F", bound=Callable[..., Any])


def detail(e: sqlite3.Error) -> str:
    """SQLite's message, in words a user can act on where SQLite's are vague."""
    name = getattr(e, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_READONLY"):
        return "it is read-only"
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return f"it is damaged ({e})"
    return str(e)


def writes(what: str) -> Callable[[F], F]:
    """Decorates a Store method that writes: any error of the database becomes
    ``store PATH: cannot <what>: <reason>``.

    ``what`` is formatted with the method's arguments; ``{run}`` names the run as users
    see it (``run N of experiment E``) when the method takes ``run_id``.
    """

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except self.backend.errors as e:
                fields = signature.bind(self, *args, **kwargs).arguments
                if "run_id" in fields:
                    fields["run"] = self.run_label(fields["run_id"])
                raise StoreError(
                    f"store {self.path}: cannot {what.format(**fields)}: {self.backend.detail(e)}"
                ) from e

        return cast(F, wrapper)

    return decorate


def reads(fn: F) -> F:
    """Decorates a Store method that reads: any error of the database becomes
    ``cannot read store PATH: …``."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(self, *args, **kwargs)
        except self.backend.errors as e:
            raise StoreError(f"cannot read store {self.path}: {self.backend.detail(e)}") from e

    return cast(F, wrapper)
