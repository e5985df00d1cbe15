"""Writing a table (`Store.runs`' tidy runs) to CSV or Parquet: the format from the file
name unless given, the path checked before any work, the file replaced whole
(`perflab.report.writable`: a temporary file, then renamed)."""

from __future__ import annotations

import importlib.util
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: Table formats, and the file names that choose them.
TABLE_FORMATS = ("csv", "parquet")
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """``csv`` or ``parquet``: ``fmt`` if given, else from the name (``-``: stdout, CSV);
    InputError (one line) for anything else, and for Parquet on stdout."""
    stdout = str(path) == "-"
    if fmt is not None:
        if fmt not in TABLE_FORMATS:
            raise InputError(f"unknown table format '{fmt}' (use {' or '.join(TABLE_FORMATS)})")
    elif stdout:
        fmt = "csv"
    else:
        suffix = Path(path).suffix.lower()
        if suffix not in SUFFIXES:
            raise InputError(
                f"cannot tell the format of '{Path(path).name}': name it .csv or .parquet "
                "(or give the format)"
            )
        fmt = SUFFIXES[suffix]
    if stdout and fmt != "csv":
        raise InputError(f"{fmt} is binary: write it to a file, e.g. runs.{fmt}")
    return fmt


def table_csv(table: pd.DataFrame) -> str:
    """The table as CSV text: a header row, no index, numbers as Python writes them (they
    read back to the same floats), empty fields for missing values."""
    text: str = table.to_csv(index=False, lineterminator="\n")
    return text


def table_bytes(table: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        return table_csv(table).encode()
    if importlib.util.find_spec("pyarrow") is None:  # pandas' Parquet engine
        raise InputError("writing Parquet needs pyarrow: pip install pyarrow")
    buf = io.BytesIO()
    table.to_parquet(buf, index=False)
    return buf.getvalue()


def check_table_path(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of a table to write at ``path``, after checking that it can be written
    there (a folder, a read-only place: InputError, before any work)."""
    from perflab.report.writable import check_writable

    kind = table_format(path, fmt)
    if str(path) != "-":
        check_writable(Path(path), "export")
    return kind


def write_table(table: pd.DataFrame, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Write ``table`` to ``path`` (not ``-``) whole, in ``fmt`` or the name's format."""
    from perflab.report.writable import write_atomically

    if str(path) == "-":
        raise InputError("write_table writes a file: name one (table_csv gives the text)")
    kind = check_table_path(path, fmt)
    out = Path(path)
    write_atomically(out, table_bytes(table, kind), "export")
    return out
