"""`perflab history NAME` in a terminal: one table per cell and variant — a row per version
(its commit, its runs, each metric's mean with its interval, in a readable unit) — and
under it the change points as sentences, fitted to the console's width
(`terminal_layout.lay_out`). The first version at a new level is coloured (green better,
red worse)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from perflab.analysis.version_series import History
from perflab.report.history_words import (
    change_sentence,
    experiments_text,
    groups,
    history_table,
    method_line,
    no_change_sentence,
)
from perflab.report.safe_text import safe_text
from perflab.report.terminal_layout import STYLE, lay_out


def render_history_terminal(history: History, console: Console) -> None:
    """The history for a terminal, every line within ``console.width``."""
    console.print(
        safe_text(f"{history.name} — history", "bold", one_line=True)
        + safe_text(f" ({experiments_text(history)})", one_line=True)
    )
    for w in history.warnings:
        console.print(Text("warning: ", style="yellow") + safe_text(w.message))
    for group in groups(history):
        console.print()
        console.print(safe_text(group.title(history.params), "bold", one_line=True))
        table = history_table(history, group)
        lead = len(table.columns) - len(group.series)
        for t in lay_out(console, table, lead=lead).tables:
            console.print(t)
        for s in group.series:
            if not s.found:
                console.print(safe_text(f"{s.metric.name}: {no_change_sentence(history)}", "dim"))
            for c in s.found:
                line = f"{s.metric.name}: {change_sentence(c, s.metric.unit)}"
                console.print(safe_text(line, STYLE.get(c.point.verdict, "")))
            for w in s.changes.warnings:
                if w.code != "too_few_versions":
                    console.print(Text("warning: ", style="yellow") + safe_text(w.message))
    console.print()
    console.print(safe_text(method_line(history), "dim"))
