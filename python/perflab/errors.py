"""Errors a user can fix: each prints as one line, with a location when there is one.

The CLI turns any `PerflabError` into ``perflab: error: <file:line: >message`` and
exit code 2; nothing a user typed or wrote should ever surface as a traceback.
"""

from __future__ import annotations


class PerflabError(Exception):
    """A user-facing error: ``message`` says what is wrong, ``hint`` what to do."""

    #: The command's exit status when this error ends it (2: bad input; see cli/__init__.py).
    exit_code = 2

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def one_line(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class StoppedError(PerflabError):
    """The experiment could not go on (a host unreachable): not bad input, exit status 1."""

    exit_code = 1


class SpecError(PerflabError):
    """The experiment file is invalid; ``location`` is ``file:line``."""


class StoreError(PerflabError):
    """The results store cannot be opened or does not hold what was asked for."""


class StoreMissingError(StoreError):
    """There is no store there yet (a database without perflab's tables): a reader that
    only looks for earlier runs finds none, a command that needs the store says so."""


class InputError(PerflabError):
    """A command-line argument or an input file (CSV, JSON) is invalid."""
