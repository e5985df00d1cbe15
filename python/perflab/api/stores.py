"""Stores as a whole: opening one (a SQLite file or a PostgreSQL URL, as
`perflab.store.location` names it), and copying experiments from one store into another
(`perflab store copy`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflab.store import Database
    from perflab.store.copy import Copied


def open_store(path: str | None, *, write: bool = False, create: bool = True) -> Database:
    """The store at ``path`` (None: the default). Reading (the default) creates and
    changes nothing: a missing store is an error; ``write`` creates it unless ``create``
    is False."""
    from perflab.store import Database

    return Database(path, write=write, create=create)


def copy_store(
    source: str,
    destination: str,
    experiments: Sequence[str],
    progress: Callable[[int, int, Copied], None] | None = None,
) -> list[Copied]:
    """Every experiment of ``source`` (or those named), each copied whole into
    ``destination`` as a new experiment, in one transaction each."""
    from perflab.store.copy import copy_store as copy

    if progress is None:
        return copy(source, destination, list(experiments))
    return copy(source, destination, list(experiments), progress)
