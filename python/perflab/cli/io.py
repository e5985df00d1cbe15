"""Where the CLI writes: injectable streams so tests need no subprocess."""

from __future__ import annotations

import errno
import functools
import os
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

from perflab.report.safe_text import terminal_safe


class CliIO:
    """stdout/stderr writers plus rich consoles bound to them.

    Colour follows the streams: on only for a terminal, off when ``NO_COLOR`` is set.
    """

    def __init__(self, out: TextIO, err: TextIO):
        self.out = out
        self.err = err
        self._consoles: dict[str, Console] = {}

    @property
    def console(self) -> Console:
        return self._console("out")

    @property
    def err_console(self) -> Console:
        return self._console("err")

    def _console(self, which: str) -> Console:
        """Made on first use: rich costs ~30 ms to import, which `--help` need not pay."""
        if which not in self._consoles:
            stream = self.out if which == "out" else self.err
            self._consoles[which] = _console_class()(
                file=stream,
                no_color=bool(os.environ.get("NO_COLOR")),
                highlight=False,
                soft_wrap=False,
                width=_width(stream, messages=which == "err"),
            )
        return self._consoles[which]

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


@functools.cache
def _console_class() -> type[Console]:
    """rich's Console, but a closed pipe is a BrokenPipeError for `perflab.cli.main` to end
    on (rich's own handling exits with status 1, perflab's "a check failed")."""
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more to write
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return PipeConsole


#: The width for a pipe or a file when COLUMNS does not say: what fits a classic terminal.
PIPE_WIDTH = 80
#: Messages (progress, warnings) to a pipe or a file: one line each, never wrapped, so that
#: a log can be searched line by line.
LOG_WIDTH = 10_000


def _width(stream: TextIO, *, messages: bool = False) -> int | None:
    """The width output is laid out to: a terminal's own (None: rich asks it, and COLUMNS,
    when set, wins); for a pipe or a file, COLUMNS when set (``COLUMNS=200 perflab compare 1
    > out.txt``), else 80 — the tables shrink to fit rather than cut anything — and for
    ``messages`` (stderr: progress and warnings) no limit, one line each."""
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):
        pass
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return LOG_WIDTH if messages else PIPE_WIDTH
