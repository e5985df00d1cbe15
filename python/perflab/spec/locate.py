"""Line numbers of keys in a TOML document, for file:line error messages.

Hand-written because neither tomllib nor tomlkit exposes source positions. It is a
position-only scanner (values are not decoded; tomllib has already parsed the file
successfully), covering headers, array-of-tables, dotted/quoted keys, inline tables
and arrays spanning several lines, and all four string forms.
"""

from __future__ import annotations

import tomllib
from typing import TypeAlias

# A key path as pydantic reports locations: str keys, int indexes.
Path: TypeAlias = tuple[str | int, ...]


def key_lines(text: str) -> dict[Path, int]:
    """Map every key path (as pydantic reports locations: str keys, int indexes) to its 1-based line."""
    return _Scanner(text).scan()


def find_line(lines: dict[Path, int], path: Path) -> int | None:
    """Line of ``path`` or of its nearest located ancestor; None when nothing matches."""
    path = tuple(path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


class _Scanner:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.line = 1
        self.out: dict[Path, int] = {}
        self.array_counts: dict[Path, int] = {}

    # -- low-level helpers
    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.i < len(self.s):
                if self.s[self.i] == "\n":
                    self.line += 1
                self.i += 1

    def skip_ws(self, newlines: bool) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.advance()
            elif c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.advance()
            else:
                return

    def skip_string(self) -> str:
        """Skip a string starting at the cursor; return its (raw) content."""
        for quote in ('"""', "'''"):
            if self.s.startswith(quote, self.i):
                self.advance(3)
                start = self.i
                while self.i < len(self.s) and not self.s.startswith(quote, self.i):
                    self.advance(2 if quote[0] == '"' and self.peek() == "\\" else 1)
                content = self.s[start : self.i]
                self.advance(3)
                while self.peek() == quote[0]:  # up to two extra quotes belong to the content
                    self.advance()
                return content
        q = self.peek()
        self.advance()
        start = self.i
        while self.i < len(self.s) and self.peek() != q and self.peek() != "\n":
            self.advance(2 if q == '"' and self.peek() == "\\" else 1)
        content = self.s[start : self.i]
        self.advance()
        return content

    def read_key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.skip_ws(newlines=False)
            c = self.peek()
            if c in "\"'":
                raw = self.skip_string()
                parts.append(_unescape(raw) if c == '"' and "\\" in raw else raw)
            else:
                start = self.i
                while self.peek() and (self.peek().isalnum() or self.peek() in "_-"):
                    self.advance()
                parts.append(self.s[start : self.i])
            self.skip_ws(newlines=False)
            if self.peek() == ".":
                self.advance()
                continue
            return parts

    # -- grammar
    def scan(self) -> dict[Path, int]:
        prefix: Path = ()
        while self.i < len(self.s):
            self.skip_ws(newlines=True)
            if self.i >= len(self.s):
                break
            if self.s.startswith("[[", self.i):
                line = self.line
                self.advance(2)
                key = tuple(self.read_key())
                self.advance(2)
                idx = self.array_counts.get(key, 0)
                self.array_counts[key] = idx + 1
                prefix = key + (idx,)
                self.out.setdefault(key, line)
                self.out[prefix] = line
            elif self.peek() == "[":
                line = self.line
                self.advance()
                prefix = tuple(self.read_key())
                self.advance()
                self.out.setdefault(prefix, line)
            else:
                self.key_value(prefix)
            self._skip_rest_of_line()
        return self.out

    def _skip_rest_of_line(self) -> None:
        while self.i < len(self.s) and self.s[self.i] != "\n":
            self.advance()

    def key_value(self, prefix: Path) -> None:
        line = self.line
        path = prefix + tuple(self.read_key())
        self.out.setdefault(path, line)
        if self.peek() == "=":
            self.advance()
        self.skip_ws(newlines=False)
        self.value(path)

    def value(self, path: Path) -> None:
        c = self.peek()
        if c in "\"'":
            self.skip_string()
        elif c == "{":
            self.advance()
            while True:
                self.skip_ws(newlines=True)
                if self.peek() in ("}", ""):
                    self.advance()
                    return
                if self.peek() == ",":
                    self.advance()
                    continue
                self.key_value(path)
        elif c == "[":
            self.advance()
            idx = 0
            while True:
                self.skip_ws(newlines=True)
                if self.peek() in ("]", ""):
                    self.advance()
                    return
                if self.peek() == ",":
                    self.advance()
                    idx += 1
                    continue
                self.out.setdefault(path + (idx,), self.line)
                self.value(path + (idx,))
        else:
            while self.peek() and self.peek() not in ",]}\n#":
                self.advance()


def _unescape(raw: str) -> str:
    """A basic string's escapes (``"a\\nb"`` → a newline), as the parser read the key."""
    try:
        key: str = tomllib.loads(f'k = "{raw}"')["k"]
        return key
    except tomllib.TOMLDecodeError:
        return raw
