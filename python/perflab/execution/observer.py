"""What the runner reports as an experiment goes: the `Observer` it calls (the CLI's progress
bar implements it), a silent one, and the experiment's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from perflab.execution.run_execution import RunOutcome
    from perflab.store import RunRow


class Observer(Protocol):
    """Progress reporting; the CLI implements it with a progress bar."""

    def started(self, experiment_id: int, total: int, done: int, resumed: bool) -> None: ...
    def run_started(self, run: RunRow, index: int, total: int) -> None: ...
    def run_finished(self, run: RunRow, outcome: RunOutcome, index: int, total: int) -> None: ...
    def message(self, text: str) -> None: ...
    def replanned(self, total: int, projected_total: int) -> None: ...  # adaptive blocks added
    def finished(self, summary: ExperimentOutcome) -> None: ...


class SayOnce:
    """An observer's `message`, each text said once per experiment: a note that holds for
    every run (a monitor the host's kernel lacks, kernel stacks not allowed) is not
    repeated run after run."""

    def __init__(self, message: Callable[[str], None]) -> None:
        self._message = message
        self._said: set[str] = set()

    def __call__(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._message(text)


class SilentObserver:
    """Reports nothing (the runner's default)."""

    def started(self, *a: object) -> None: ...
    def replanned(self, *a: object) -> None: ...
    def run_started(self, *a: object) -> None: ...
    def run_finished(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def finished(self, *a: object) -> None: ...


@dataclass
class ExperimentOutcome:
    experiment_id: int
    status: str  # complete | interrupted | aborted
    counts: dict[str, int] = field(default_factory=dict)
    message: str | None = None
