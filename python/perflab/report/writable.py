"""Writing report files: can a file be written at PATH (asked before the work that produces
it, so a report, export or screenshot aimed at a folder that cannot take it fails at once,
in one line, with nothing written), and the one atomic writer every report file goes through
(a reader never sees half a file; a crash or a full disk leaves the previous one intact).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from perflab.errors import InputError


def check_writable(path: str | Path, what: str = "") -> Path:
    """``path`` as a Path if a file can be written (created or replaced) there; InputError
    naming it otherwise: a folder, a special file, a parent that is a file, a missing folder
    that cannot be created, a read-only folder.

    Missing folders are fine when they can be created (the writers create them). The
    folder's writability is tried, not guessed from permission bits (root ignores those, a
    read-only mount does not): a temporary file is created in it and removed at once.
    """
    label = f"{what} {path}" if what else str(path)
    try:
        p = Path(path)
        if str(path) == "" or p.name in ("", ".", ".."):
            raise InputError(f"cannot write {label or repr(str(path))}: name a file")
        if p.is_dir():
            raise InputError(f"cannot write {label}: it is a folder (name a file in it)")
        if p.exists() and not stat.S_ISREG(p.stat().st_mode):
            raise InputError(f"cannot write {label}: it exists and is not a regular file")
        folder = p.parent
        existing = folder
        while not os.path.lexists(existing) and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise InputError(f"cannot write {label}: {existing} is not a folder")
        try:
            fd, probe = tempfile.mkstemp(dir=existing, prefix=".perflab-write-check-")
        except OSError as e:
            missing = (
                ""
                if existing == folder
                else f"folder {folder} does not exist and cannot be created: "
            )
            raise InputError(
                f"cannot write {label}: {missing}{existing} is not writable ({e.strerror or e})"
            ) from None
        os.close(fd)
        os.unlink(probe)
        return p
    except OSError as e:
        raise InputError(f"cannot write {label}: {e.strerror or e}") from None
    except ValueError as e:  # a NUL character in the name
        raise InputError(f"cannot write {what + ' ' if what else ''}{str(path)!r}: {e}") from None


def write_atomically(path: Path, data: bytes | str, what: str = "") -> None:
    """Replace ``path`` with ``data`` whole or not at all (a temporary file beside it, then
    renamed); InputError naming the file when it cannot be written."""
    payload = data.encode() if isinstance(data, str) else data
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise InputError(
            f"cannot write {what + ' ' if what else ''}{path}: {e.strerror or e}"
        ) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
