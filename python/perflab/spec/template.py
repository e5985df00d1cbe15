"""``{param}`` substitution in commands (shell-quoted) and in typed settings (raw values).

``{{`` and ``}}`` stand for literal braces. Names are identifiers; anything else in
braces (``${HOME}``, ``awk '{print $1}'``) is left untouched, so shell code keeps working.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

_FIELD = re.compile(r"\{\{|\}\}|(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(text: str) -> list[str]:
    """Names referenced as ``{name}`` in ``text``."""
    return [m.group(1) for m in _FIELD.finditer(text) if m.group(1)]


def render_shell(text: str, values: Mapping[str, Any]) -> str:
    """Substitute each ``{name}`` by the shell-quoted string of its value."""

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        # A value that needs no quoting stays bare (readable logs); others are quoted.
        return shlex.quote(_to_text(values[m.group(1)]))

    return _FIELD.sub(repl, text)


def render_value(value: Any, values: Mapping[str, Any]) -> Any:
    """Substitute in a typed setting: a string that is exactly ``{name}`` becomes the raw
    value (an int stays an int); other strings get plain text substitution; tables and
    arrays are rendered recursively."""
    if isinstance(value, str):
        m = _FIELD.fullmatch(value)
        if m and m.group(1):
            return values[m.group(1)]

        def repl(m: re.Match[str]) -> str:
            if m.group(0) in ("{{", "}}"):
                return m.group(0)[0]
            return _to_text(values[m.group(1)])

        return _FIELD.sub(repl, value)
    if isinstance(value, dict):
        return {k: render_value(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, values) for v in value]
    return value


def _to_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
