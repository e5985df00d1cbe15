"""Size limits of an experiment file, checked before and right after parsing.

A spec is a small hand-written file; these bounds are far above any real one and far
below what would exhaust the parser (nesting), the memory (size) or the patience of
whoever runs it (cells, runs). Each breach is one `SpecError` with ``file:line``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perflab.errors import SpecError

MIB = 1 << 20
KIB = 1 << 10

#: The spec file itself.
MAX_FILE_BYTES = 1 * MIB
#: Arrays and tables inside one another (``[[[…]]]``, ``{a = {b = …}}``, ``a.b.c.…``).
MAX_DEPTH = 32
#: A `description` (variant, experiment) and other prose.
MAX_TEXT = 4 * KIB
#: A command (phase, hooks, setup/teardown, overhead), an env value, a string parameter.
MAX_COMMAND = 64 * KIB
#: Short strings: units, tool names, parser names, env names, regexes, JSON paths.
MAX_SHORT = 1 * KIB
#: Cells of the matrix (the product of its parameters' value counts).
MAX_CELLS = 10_000
#: Runs the plan may hold: cells × variants × (warm-up + repetitions, adaptive: its max).
MAX_RUNS = 1_000_000


def size_text(n: int) -> str:
    """1536 → '1.5 KiB', 3 MiB → '3 MiB'."""
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if n >= unit:
            return f"{n / unit:.3g} {name}"
    return f"{n} bytes"


def read_spec_bytes(path: Path) -> bytes:
    """The file's bytes, refusing one over `MAX_FILE_BYTES` before reading it whole."""
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            try:
                size = max(path.stat().st_size, len(data))
            except OSError:
                size = len(data)
            raise SpecError(
                f"spec {path} is {size_text(size)}; the limit is {size_text(MAX_FILE_BYTES)}"
            )
    return data


def check_text_size(text: str, label: str) -> None:
    n = len(text.encode("utf-8", "surrogatepass"))
    if n > MAX_FILE_BYTES:
        raise SpecError(f"spec {label} is {size_text(n)}; the limit is {size_text(MAX_FILE_BYTES)}")


def check_nesting(text: str, label: str) -> None:
    """Arrays/inline tables nested deeper than `MAX_DEPTH`, found before the TOML parser
    (which recurses once per level) sees them. Strings and comments are skipped; on text
    that is not TOML the count is approximate, and the parser reports the real error."""
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c in "\"'":
            i, line = _skip_string(text, i, line)
            continue
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError(
                    f"arrays or tables nested more than {MAX_DEPTH} deep",
                    location=f"{label}:{line}",
                )
        elif c in "]}":
            depth = max(0, depth - 1)
        i += 1


def _skip_string(text: str, i: int, line: int) -> tuple[int, int]:
    """Index after the string starting at ``i`` (and the line it ends on)."""
    q = text[i]
    if text.startswith(q * 3, i):
        end = text.find(q * 3, i + 3)
        if q == '"':
            while end > 0 and _escaped(text, end):
                end = text.find(q * 3, end + 1)
        end = len(text) if end < 0 else end + 3
        return end, line + text.count("\n", i, end)
    j = i + 1
    while j < len(text) and text[j] != q and text[j] != "\n":
        j += 2 if (q == '"' and text[j] == "\\") else 1
    return min(j + 1, len(text)) if j < len(text) and text[j] == q else j, line


def _escaped(text: str, j: int) -> bool:
    k = j
    while k > 0 and text[k - 1] == "\\":
        k -= 1
    return (j - k) % 2 == 1


def data_depth(data: Any) -> int:
    """Deepest nesting of tables and arrays in parsed TOML (iterative: any depth is safe)."""
    deepest = 0
    stack = [(data, 0)]
    while stack:
        value, d = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        d += 1
        deepest = max(deepest, d)
        stack.extend((v, d) for v in children if isinstance(v, (dict, list)))
    return deepest


def check_depth(data: Any, lines: dict[tuple[str | int, ...], int], label: str) -> None:
    """Dotted keys nest without brackets (``a.b.c.… = 1``): check what was parsed."""
    if data_depth(data) <= MAX_DEPTH:
        return
    deep = [line for path, line in lines.items() if len(path) > MAX_DEPTH]
    where = f"{label}:{min(deep)}" if deep else label
    raise SpecError(f"keys, arrays or tables nested more than {MAX_DEPTH} deep", location=where)
