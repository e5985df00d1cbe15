"""Find a JSON object inside a command's output, possibly after other text.

Tools print human text and JSON to the same stream (``hyperfine --export-json
/dev/stdout``), and memtier_benchmark's JSON writer emits invalid JSON when its
output is not seekable (a pipe: trailing commas stay) and prints ``inf``/``nan``
as C does. The standard `json` module rejects both, so a lenient retry repairs
exactly those two defects; nothing else is guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

_OBJECT_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_C_NONFINITE = re.compile(r"([:\[,]\s*)[-+]?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)


def _repair(text: str) -> str:
    return _C_NONFINITE.sub(r"\1null", _TRAILING_COMMA.sub(r"\1", text))


def _candidates(text: str, lenient: bool) -> Iterator[Any]:
    """Each JSON value that starts a line, outermost first; nested objects are not revisited."""
    decoder = json.JSONDecoder()
    pos = 0
    while (match := _OBJECT_START.search(text, pos)) is not None:
        start = match.end() - 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value, end = None, match.end()
            if lenient:
                try:
                    value = decoder.raw_decode(_repair(text[start:]))[0]
                except json.JSONDecodeError:
                    pass
        if value is not None:
            yield value
        pos = end


def find_object(
    text: str, accept: Callable[[dict[str, Any]], bool], *, lenient: bool = False
) -> dict[str, Any] | None:
    """The first JSON object starting at the beginning of a line for which ``accept`` is true."""
    for value in _candidates(text, lenient):
        if isinstance(value, dict) and accept(value):
            return value
    return None


def last_object(text: str) -> dict[str, Any] | None:
    """The last JSON object starting at the beginning of a line (a program's result printed
    after its log lines), strictly parsed."""
    found = None
    for value in _candidates(text, lenient=False):
        if isinstance(value, dict):
            found = value
    return found
