"""Text from programs and the store, made safe to print on a terminal.

Output of the commands perflab runs, failure reasons, server error replies, stored
artifacts and environment details can carry terminal control sequences: ``ESC [ 2 J``
clears the screen, ``ESC ] 0 ; … BEL`` retitles the window (OSC 8 writes hyperlinks,
OSC 52 the clipboard), a bare ``CR`` overwrites what a line said, and bidi overrides
(U+202E …) reorder what is shown. `terminal_safe` writes every such character visibly,
the way Python's repr does (ESC → ``\\x1b``, U+202E → ``\\u202e``), so the text is shown,
never obeyed. Newlines and tabs stay in multi-line text (`one_line=True` escapes them too).

`safe_text` wraps the result in a ``rich.text.Text``, which rich prints as is: ``[red]``
in program output stays literal instead of being read as markup.

JSON output needs none of this: ``json.dumps`` escapes control characters itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["UNSAFE", "has_unsafe", "safe_text", "terminal_safe"]

#: Characters a terminal may act on: C0 controls (NUL…US) and DEL, C1 controls
#: (U+0080…U+009F, which some terminals read as CSI/OSC…), the bidi embeddings and
#: overrides U+202A…U+202E and isolates U+2066…U+2069, and the line/paragraph separators.
#: Newline and tab are handled by the callers of `_escape`.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_MULTI = re.compile("(?:(?!\n|\t)" + UNSAFE.pattern + ")")


def terminal_safe(text: str | bytes | None, *, one_line: bool = False) -> str:
    """``text`` with every character a terminal could act on written visibly (see module doc).

    Bytes are decoded as UTF-8 (undecodable bytes become U+FFFD). Multi-line text keeps its
    newlines and tabs unless ``one_line``; a carriage return is always escaped (it would let
    a line overwrite itself). Printable text, backslashes included, is unchanged.
    """
    if text is None:
        return ""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    if text.isascii() and text.isprintable():  # nothing to escape (a table's every number)
        return text
    pattern = UNSAFE if one_line else _MULTI
    return pattern.sub(_escape, text)


def has_unsafe(text: str, *, one_line: bool = False) -> bool:
    """Would `terminal_safe` change ``text``?"""
    return bool((UNSAFE if one_line else _MULTI).search(text))


def safe_text(text: str | bytes | None, style: str = "", *, one_line: bool = False) -> Text:
    """`terminal_safe` text as a rich ``Text``: printed literally, markup characters included."""
    from rich.text import Text

    return Text(terminal_safe(text, one_line=one_line), style=style)
