"""The runner's observer for a terminal: a progress bar (run k of n, cell, ETA) on a tty,
one line per finished run otherwise (CI logs)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from perflab.durations import format_duration
from perflab.report.numbers import fmt_number
from perflab.report.safe_text import safe_text

if TYPE_CHECKING:
    from perflab.execution.observer import ExperimentOutcome
    from perflab.execution.run_execution import RunOutcome
    from perflab.records import RunRow


class ConsoleObserver:
    def __init__(self, console: Console):
        self.console = console
        self.live = console.is_terminal
        self.progress: Progress | None = None
        self.task: TaskID | None = None  # the bar's task: set with progress
        self.t0 = time.monotonic()
        self.failed = 0

    def started(self, experiment_id: int, total: int, done: int, resumed: bool) -> None:
        what = (
            f"resuming experiment {experiment_id}: {done} of {total} runs already done"
            if resumed
            else f"experiment {experiment_id}: {total} runs"
        )
        self.console.print(what, markup=False)
        if self.live:
            self.progress = Progress(
                TextColumn("[bold]run"),
                MofNCompleteColumn(),
                BarColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self.progress.start()
            self.task = self.progress.add_task("", total=total, completed=done)

    def run_started(self, run: RunRow, index: int, total: int) -> None:
        if self.progress is not None and self.task is not None:
            # the description is a format template for rich: escape markup as well as controls
            self.progress.update(self.task, description=_markup_safe(_describe(run)))

    def run_finished(self, run: RunRow, outcome: RunOutcome, index: int, total: int) -> None:
        if outcome.status not in ("ok", "interrupted"):
            self.failed += 1
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1 if outcome.status != "interrupted" else 0)
            if outcome.status not in ("ok", "interrupted"):
                self.progress.console.print(
                    safe_text(f"run {index} {outcome.status}", "red")
                    + safe_text(f": {outcome.reason}", one_line=True)
                )
            return
        shown = ", ".join(f"{k}={fmt_number(v)}" for k, v in list(outcome.metrics.items())[:3])
        status = outcome.status if outcome.status == "ok" else f"{outcome.status}: {outcome.reason}"
        self.console.print(
            safe_text(
                f"[{index}/{total}] {_describe(run)} {status} "
                f"({format_duration(outcome.seconds)}){' ' + shown if shown else ''}",
                one_line=True,
            )
        )

    def replanned(self, total: int, projected_total: int) -> None:
        """Adaptive repetitions added a block: the bar's length (and ETA) follow the projection."""
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, total=max(total, projected_total))

    def message(self, text: str) -> None:
        (self.progress.console if self.progress else self.console).print(
            safe_text(f"perflab: {text}")
        )

    def finished(self, summary: ExperimentOutcome) -> None:
        if self.progress is not None:
            self.progress.stop()
        counts = ", ".join(f"{n} {s}" for s, n in sorted(summary.counts.items()))
        self.console.print(
            f"experiment {summary.experiment_id} {summary.status} "
            f"in {format_duration(time.monotonic() - self.t0)} ({counts})",
            markup=False,
        )
        if summary.message:
            self.console.print(safe_text(summary.message))


def _markup_safe(text: str) -> str:
    from rich.markup import escape

    return escape(safe_text(text, one_line=True).plain)


def _describe(run: RunRow) -> str:
    cell = "" if run.cell_key == "-" else run.cell_key + " · "
    warm = " (warm-up)" if run.warmup else ""
    return f"{cell}{run.variant} #{run.repetition}{warm}"
