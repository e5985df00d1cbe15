"""What is at a store's path, checked before SQLite opens it.

SQLite would silently create a missing file (so a read would write), and reports most
faults as "unable to open database file". Checking first gives one line naming the path
for each fault, and never writes to a file that is not a sound store.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from perflab.errors import StoreError

MAGIC = b"SQLite format 3\x00"
HEADER = 100  # bytes of the SQLite file header
WAL_HEADER = 32  # a -wal file no longer than this holds no frames


def check_location(path: Path, *, write: bool, create: bool) -> bool:
    """Whether the store file exists; raises StoreError when the path cannot serve.

    A missing store is an error unless ``write and create``; then its missing folders are
    created (only then: reading commands create nothing).
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise _missing(path) if not (write and create) else _cannot_create(path) from None
    except OSError as e:
        raise StoreError(f"cannot reach store {path}: {e.strerror}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise StoreError(
                f"store {path} is a folder, not a store file", hint="pass --store FILE"
            )
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"store {path} is not a regular file")
        if write:
            if not _can_write(path):
                raise StoreError(f"store {path} is read-only")
            if not _can_write(folder(path)):
                raise StoreError(
                    f"store {path} is read-only (its folder {folder(path)} cannot be written, "
                    "and SQLite keeps its -wal and -shm files there)"
                )
        return True
    if not (write and create):
        raise _missing(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _cannot_create(path) from None
    except OSError as e:
        raise StoreError(
            f"cannot create store {path}: cannot create folder {path.parent}: {e.strerror}"
        ) from None
    if not _can_write(folder(path)):
        raise StoreError(f"cannot create store {path}: folder {folder(path)} is read-only")
    return False


def check_header(path: Path, *, write: bool) -> None:
    """Refuses a file that is not an intact SQLite database, by reading its header only.

    An empty file is a new store to a writing command (SQLite's own convention; there is
    nothing in it to lose) and an error to a reading one.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise StoreError(f"cannot read store {path}: {e.strerror}") from None
    if size == 0:
        if write:
            return
        raise StoreError(f"store {path} is empty (0 bytes): not a perflab store")
    if head[: len(MAGIC)] != MAGIC[: len(head)]:
        raise StoreError(f"store {path} is not a perflab store (not an SQLite database)")
    if len(head) < HEADER:
        raise StoreError(
            f"store {path} is damaged: truncated to {size} bytes, inside the SQLite header"
        )
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    counted = pages > 0 and head[24:28] == head[92:96]  # SQLite's rule for a valid in-header size
    if counted and size < pages * page_size and not wal_has_frames(path):
        raise StoreError(
            f"store {path} is damaged: truncated to {size} bytes of {pages * page_size}"
        )


def wal_has_frames(path: Path) -> bool:
    """Whether ``PATH-wal`` holds changes not yet in the main file (a writer is on, or crashed)."""
    try:
        return os.stat(f"{path}-wal").st_size > WAL_HEADER
    except OSError:
        return False


def writable(path: Path) -> bool:
    """Whether this process may write the store file and create files next to it."""
    return _can_write(path) and _can_write(folder(path))


def folder(path: Path) -> Path:
    return path.absolute().parent


def _can_write(p: Path) -> bool:
    """access(2) sees modes, read-only mounts and immutable files alike (root included)."""
    effective = os.access in os.supports_effective_ids
    return os.access(p, os.W_OK | (os.X_OK if p.is_dir() else 0), effective_ids=effective)


def _file_in_the_way(path: Path) -> Path | None:
    """The first ancestor of ``path`` that exists but is not a folder."""
    for a in reversed(path.parents):
        if a.exists() and not a.is_dir():
            return a
    return None


def _missing(path: Path) -> StoreError:
    blocker = _file_in_the_way(path)
    if blocker is not None:
        return StoreError(f"no store at {path} ({blocker} is a file, not a folder)")
    return StoreError(
        f"no store at {path}", hint="run an experiment or import first, or pass --store"
    )


def _cannot_create(path: Path) -> StoreError:
    blocker = _file_in_the_way(path)
    return StoreError(
        f"cannot create store {path}: {blocker or path.parent} is a file, not a folder"
    )
