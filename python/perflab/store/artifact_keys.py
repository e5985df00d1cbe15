"""The names of stored artifacts, built and parsed in one place.

An artifact is a blob kept with a run (or with its experiment) under a name. The names
have a grammar — ``KIND:WHAT`` — that producers (`execution/`) write and readers (the
use-case layer's report loader, `perflab show`, profile movers) take apart; both go
through `ArtifactKey` here, so that the grammar is written once:

- ``stdout:STEP`` / ``stderr:STEP``: a step's output; ``STEP`` is ``phase:NAME``,
  ``setup``, ``teardown``, ``service:NAME``, … and, for one load process of a phase run
  from several hosts, ``phase:NAME@PROCESS``;
- ``kv:PHASE`` (the merged result of a kv phase, JSON) and ``kv:PHASE@PROCESS`` (one
  load process's);
- ``monitor:PHASE`` (monitor series), ``counters:PHASE`` (perf counters, CSV),
  ``profile:PHASE`` (folded stacks, gzip) with ``profile-info:PHASE`` (JSON);
- ``file:PHASE:PATH``: a file a phase left (``files = [...]``);
- ``console:HOST``: a device's console during the run;
- plain names: ``commands`` (how each step ran, JSON), ``kernel``, ``leftovers``,
  ``hosts``; at experiment level, the environment's sources (``/proc/cpuinfo``,
  ``uname -a``, …) and system snapshots (``system/NNN``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Kinds whose name is ``KIND:STEP`` (a step's output).
STREAMS = ("stdout", "stderr")
#: Kinds whose name is ``KIND:PHASE`` (``@PROCESS`` for kv).
PHASE_KINDS = ("kv", "monitor", "counters", "profile", "profile-info")
#: Plain names a run keeps.
COMMANDS = "commands"
KERNEL = "kernel"
LEFTOVERS = "leftovers"
HOSTS = "hosts"
#: Names of an experiment's system snapshots start with this (``system/000``, …).
SNAPSHOT_PREFIX = "system/"


@dataclass(frozen=True)
class ArtifactKey:
    """A parsed artifact name. ``kind``: one of `STREAMS`, `PHASE_KINDS`, ``file``,
    ``console``, or ``plain`` (any other name, kept whole in ``name``)."""

    kind: str
    #: stdout/stderr: the step (``phase:NAME``, ``setup``, …); phase kinds and file: the
    #: phase; console: the host; plain: the whole name.
    name: str
    #: kv and a phase's stdout/stderr: the load process (one of several hosts), else "".
    process: str = ""
    #: file: the path of the file on its host.
    path: str = ""

    def __str__(self) -> str:
        if self.kind == "plain":
            return self.name
        at = f"@{self.process}" if self.process else ""
        if self.kind == "file":
            return f"file:{self.name}:{self.path}"
        return f"{self.kind}:{self.name}{at}"

    @property
    def phase(self) -> str | None:
        """The phase this artifact belongs to, if any."""
        if self.kind in PHASE_KINDS or self.kind == "file":
            return self.name
        if self.kind in STREAMS and self.name.startswith("phase:"):
            return self.name.removeprefix("phase:")
        return None


def parse(name: str) -> ArtifactKey:
    """The key of a stored name (`ArtifactKey`); a name of no known kind is ``plain``."""
    kind, sep, rest = name.partition(":")
    if not sep:
        return ArtifactKey("plain", name)
    if kind in STREAMS or kind in PHASE_KINDS:
        what, _, process = rest.partition("@")
        return ArtifactKey(kind, what, process)
    if kind == "file":
        phase, _, path = rest.partition(":")
        return ArtifactKey("file", phase, path=path)
    if kind == "console":
        return ArtifactKey("console", rest)
    return ArtifactKey("plain", name)


def prefix(kind: str) -> str:
    """What every name of ``kind`` starts with (a store query by prefix: ``profile:``)."""
    assert kind in STREAMS or kind in PHASE_KINDS or kind in ("file", "console"), kind
    return f"{kind}:"


def stream(which: str, step: str, process: str = "") -> str:
    """``stdout:STEP`` or ``stderr:STEP`` (``@PROCESS``: one of a phase's load processes)."""
    assert which in STREAMS, which
    return str(ArtifactKey(which, step, process))


def phase_output(which: str, phase: str, process: str = "") -> str:
    """A phase's ``stdout:phase:NAME`` / ``stderr:phase:NAME`` (``@PROCESS``)."""
    return stream(which, f"phase:{phase}", process)


def kv(phase: str, process: str = "") -> str:
    """``kv:PHASE``: a kv phase's merged result; with ``process``, one load process's."""
    return str(ArtifactKey("kv", phase, process))


def monitor(phase: str) -> str:
    return str(ArtifactKey("monitor", phase))


def counters(phase: str) -> str:
    return str(ArtifactKey("counters", phase))


def profile(phase: str) -> str:
    return str(ArtifactKey("profile", phase))


def profile_info(phase: str) -> str:
    return str(ArtifactKey("profile-info", phase))


def file(phase: str, path: str) -> str:
    return str(ArtifactKey("file", phase, path=path))


def console(host: str) -> str:
    return str(ArtifactKey("console", host))
