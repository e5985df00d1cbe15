"""What an experiment's results are, as values: an experiment, its metrics' definitions
and its runs as the store holds them (`perflab.store` reads and writes them), and a run to
insert. Plain values, no I/O: every layer may use them — the report lays them out without
reading the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Statuses of a run that has ended (its metrics and artifacts saved).
FINISHED = ("ok", "failed", "timeout")


@dataclass(frozen=True)
class ExperimentRow:
    id: int
    name: str
    description: str
    source: str
    spec_path: str | None
    spec_text: str | None
    spec_sha256: str | None
    baseline: str
    settings: dict[str, Any]
    status: str
    created_at: float
    finished_at: float | None
    runner_pid: int | None
    runner_host: str | None
    #: Who stored it (login name) and from which machine (the controller's host name); None
    #: for an experiment stored before schema 2.
    user: str | None = None
    controller_host: str | None = None
    #: Its place in a series (`perflab history`): the version measured (``v1.5``, a kernel
    #: release, a date), and the source it was built from — the commit id and the repository
    #: (a path or a URL); None when not given, and for an experiment stored before schema 3.
    version: str | None = None
    source_commit: str | None = None
    source_repo: str | None = None

    @property
    def position(self) -> Position:
        return Position(self.version, self.source_commit, self.source_repo)


@dataclass(frozen=True)
class Position:
    """Where an experiment stands in a series of versions: the version measured, and the
    commit and repository it was built from (each None when not known)."""

    version: str | None = None
    commit: str | None = None
    repo: str | None = None


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    better: str


@dataclass(frozen=True)
class RunRow:
    id: int
    order_index: int
    block: int
    cell_key: str
    cell: dict[str, str]
    variant: str
    repetition: int
    warmup: bool
    status: str
    reason: str | None
    attempts: int
    host: str | None
    started_at: float | None
    ended_at: float | None
    pid: int | None
    pid_start: str | None
    device: str | None = None  # a pool's device it ran on (``NAME[SLOT]``)


@dataclass(frozen=True)
class NewRun:
    """A run to insert: planned (status pending) or already finished (import)."""

    order_index: int
    block: int
    cell_key: str
    cell: dict[str, str]
    variant: str
    repetition: int
    warmup: bool = False
    status: str = "pending"
    metrics: dict[str, float] | None = None
    reason: str | None = None  # why a finished run failed (an import's exit status)
