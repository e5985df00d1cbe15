"""An experiment's place in a series (`perflab history`): the spec's top-level ``version``
and ``source`` keys.

``version = "1.5"`` names the version measured; ``version = { command = "git describe
--always --dirty" }`` has perflab run that command (the spec's own, in the spec's folder,
with a timeout) when the experiment starts, and take its output as the version. perflab
never runs a command the spec does not write: a version is never a template that runs
something. ``source = { repo = ".", commit = "…" }`` records what was built; without
``commit`` it is read from the repository with ``git -C REPO rev-parse HEAD``. Resolving
them (running the command, reading the commit) is `perflab.execution.position`'s.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, StrictStr

from perflab.durations import parse_duration
from perflab.spec.types import Command, Strict

#: Longest version, commit id or repository text.
MAX_VERSION = 200
#: How long a version command may take by default (seconds).
VERSION_TIMEOUT = 30.0


def check_version(text: str) -> str:
    """A version as written (the spec's, ``--version``, or a command's output stripped):
    one line of printable text, 1 to `MAX_VERSION` characters (ValueError otherwise)."""
    if not text.strip():
        raise ValueError("the version is empty")
    if len(text) > MAX_VERSION:
        raise ValueError(f"the version is {len(text)} characters long; at most {MAX_VERSION}")
    if not text.isprintable():
        raise ValueError("the version is one line of printable text (no newline or control)")
    return text


#: ``version = "v1.5"``: the version measured, as written.
VersionText = Annotated[StrictStr, AfterValidator(check_version)]
#: A commit id or a repository: one line of printable text.
SourceText = Annotated[StrictStr, Field(min_length=1), AfterValidator(check_version)]


class VersionCommand(Strict):
    """``version = { command = "git describe --always --dirty", timeout = "10s" }``: the
    version is what the command prints on stdout (stripped; one line), run with /bin/sh in
    the spec's folder when the experiment starts (not by ``--dry-run``, nor when
    ``perflab run --version`` gives it). A command that fails, prints nothing or outlasts
    its timeout (default 30 s) is an error at its line, before anything runs."""

    command: Command
    timeout: Annotated[float, BeforeValidator(parse_duration)] = VERSION_TIMEOUT


class SourceSpec(Strict):
    """``source = { repo = "…", commit = "…" }``: the source the measured version was built
    from. ``repo``: a folder (relative to the spec's) or a URL; ``commit``: its commit id,
    read with ``git -C REPO rev-parse HEAD`` when not given (``repo`` is then a git work
    tree: anything else is an error at its line)."""

    repo: SourceText
    commit: SourceText | None = None
