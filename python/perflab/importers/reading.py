"""Reading a tool's result file: text with its limits, JSON with the path to each value.

Every problem is one `InputError` naming the file and where in it: ``file:line`` for
text and for JSON that does not parse, ``file: $.benchmarks[3].real_time`` for a JSON
value of the wrong kind.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import InputError

#: Largest result file accepted (a tool's output is far smaller; this bounds memory).
MAX_FILE_BYTES = 256 << 20


def read_text(
    path: Path,
    kind: str = "result file",
    *,
    text_kind: str = "text file",
    split_hint: str = "",
    encoding_hint: str = "",
) -> str:
    """The file as UTF-8 text (a byte-order mark dropped); a one-line InputError naming the
    file (``kind``: what it should be, e.g. "CSV file") when it is missing, a folder, too
    large, binary or not UTF-8 (the hints are added to those two lines)."""
    try:
        if path.is_dir():
            raise InputError(f"{path} is a folder, not a {kind}")
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{kind} not found: {path}") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:  # a NUL character in the path
        raise InputError(f"cannot read {str(path)!r}: {e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB{split_hint}")
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise InputError(f"{path}:{line}: a NUL byte: this is not a {text_kind}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 text (byte {raw[e.start : e.start + 1]!r}){encoding_hint}"
        ) from None


def read_json(path: Path) -> Node:
    """The file's JSON document, as the root `Node` (``$``)."""
    text = read_text(path)
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_int=_integer)
    except json.JSONDecodeError as e:
        what = "empty file" if not text.strip() else f"not valid JSON: {e.msg}"
        raise InputError(f"{path}:{e.lineno}:{e.colno}: {what}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    except _Constant as e:
        raise InputError(f"{path}: {e.args[0]} is not a JSON number") from None
    return Node(path, "$", value)


class _Constant(ValueError):
    pass


def _integer(digits: str) -> int | float:
    """A JSON integer; one too long for Python's int() (over 4300 digits) as a float (inf)."""
    return int(digits) if len(digits) <= 4000 else float(digits)


def _no_constant(name: str) -> Any:
    raise _Constant(name)


@dataclass(frozen=True)
class Node:
    """A JSON value and where it is: ``file`` and its JSON path ``at``."""

    file: Path
    at: str
    value: Any

    def error(self, what: str) -> InputError:
        return InputError(f"{self.file}: {self.at}: {what}")

    def has(self, key: str) -> bool:
        return key in self.object() and self.object()[key] is not None

    def get(self, key: str) -> Node:
        """The member ``key`` of this object (an error if it is missing)."""
        obj = self.object()
        if key not in obj:
            raise self.error(f"no {key!r}")
        return Node(self.file, f"{self.at}.{key}", obj[key])

    def opt(self, key: str) -> Node | None:
        """The member ``key``, or None when it is missing or null."""
        return self.get(key) if self.has(key) else None

    def items(self) -> list[Node]:
        """The elements of this array."""
        if not isinstance(self.value, list):
            raise self.error(f"expected an array, found {_kind(self.value)}")
        return [Node(self.file, f"{self.at}[{i}]", v) for i, v in enumerate(self.value)]

    def object(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected an object, found {_kind(self.value)}")
        return self.value

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self.error(f"expected a string, found {_kind(self.value)}")
        return self.value

    def number(self) -> float:
        """A finite number (not a boolean)."""
        v = self.value
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.error(f"expected a number, found {_kind(v)}")
        try:
            x = float(v)
        except OverflowError:  # an integer beyond a double
            x = math.inf
        if not math.isfinite(x):
            raise self.error(f"not a finite number: {str(v)[:40]}")
        return x

    def numbers(self) -> list[float]:
        return [n.number() for n in self.items()]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        shown = repr(value) if len(value) <= 40 else repr(value[:40]) + "…"
        return f"a string ({shown})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    return "an array" if isinstance(value, list) else "an object"


def label(value: Any) -> str:
    """A JSON scalar as a matrix label: strings as they are, other values as JSON
    (``100``, ``0.5``, ``true``, ``null``)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
