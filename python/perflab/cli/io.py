"""Where the CLI writes: injectable streams so tests need no subprocess."""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console

from perflab.report.safe_text import terminal_safe


class CliIO:
    """stdout/stderr writers plus rich consoles bound to them.

    Colour follows the streams: on only for a terminal, off when ``NO_COLOR`` is set.
    """

    def __init__(self, out: TextIO, err: TextIO):
        self.out = out
        self.err = err
        no_color = bool(os.environ.get("NO_COLOR"))
        self.console = Console(file=out, no_color=no_color, highlight=False,
                               soft_wrap=False, width=_width(out))
        self.err_console = Console(file=err, no_color=no_color, highlight=False,
                                   soft_wrap=False, width=_width(err))

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def error(self, text: str) -> None:
        # one line, and nothing in it (a CSV cell, a server's reply) can drive the terminal
        self.err.write(f"perflab: error: {terminal_safe(text, one_line=True)}\n")
        self.err.flush()

    def warn(self, text: str) -> None:
        self.err.write(f"perflab: warning: {terminal_safe(text, one_line=True)}\n")
        self.err.flush()


def _width(stream: TextIO) -> int | None:
    """Terminal width for a tty; a fixed wide width otherwise so files/pipes don't wrap."""
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        pass
    return 160
