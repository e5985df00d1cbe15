"""The terminal view of a comparison: the table blocks of `tables.py` and
`scaling_table.py` (`blocks.Table`) drawn as rich tables, green = better, red = worse.

Every string (names, labels, notes) goes through `safe_text`: shown, never read as rich
markup or obeyed as a terminal control sequence."""

from __future__ import annotations

from rich import table as rich_table
from rich.console import Console
from rich.text import Text

from perflab.analysis.compare import CompareResult
from perflab.analysis.scaling import ScalingResult
from perflab.report.blocks import Table
from perflab.report.safe_text import safe_text
from perflab.report.scaling_table import method_line, scaling_tables
from perflab.report.tables import note_lines, summary_tables, tldr_table
from perflab.stats import Verdict

_STYLE: dict[Verdict | None, str] = {
    Verdict.BETTER: "bold green",
    Verdict.WORSE: "bold red",
    Verdict.WITHIN_NOISE: "yellow",
}
_WORD = {Verdict.BETTER: " better", Verdict.WORSE: " worse"}


def _rich(table: Table, words: bool) -> rich_table.Table:
    """The footer rows under a rule; ``words``: "better"/"worse" after a verdict's text."""
    t = rich_table.Table(header_style="bold")
    for name, numeric in zip(table.columns, table.numeric):
        t.add_column(
            safe_text(name, one_line=True), justify="right" if numeric else "left", no_wrap=True
        )
    for i, row in enumerate(table.rows + table.footer):
        cells = []
        for c in row:
            text = c.text + (_WORD.get(c.verdict, "") if words and c.verdict else "")
            cells.append(safe_text(text, _STYLE.get(c.verdict, ""), one_line=True))
        t.add_row(*cells, end_section=i == len(table.rows) - 1 and bool(table.footer))
    return t


def _print(console: Console, table: Table, words: bool) -> None:
    console.print()
    console.print(safe_text(table.title, "bold", one_line=True))
    console.print(_rich(table, words))


def render_terminal(result: CompareResult, console: Console, *, summaries: bool = True) -> None:
    e = result.dataset.experiment
    console.print(
        safe_text(f"{e.name} (experiment {e.id})", "bold", one_line=True)
        + safe_text(f" — {e.description}" if e.description else "")
    )
    _print(console, tldr_table(result), words=True)
    if result.correction_statement:
        console.print(safe_text(result.correction_statement, "dim"))
    if summaries:
        for table in summary_tables(result):
            _print(console, table, words=False)
    for line in note_lines(result):
        console.print(Text("warning: ", style="yellow") + safe_text(line))


def render_scaling_terminal(result: ScalingResult, console: Console) -> None:
    """`perflab compare ID --scaling PARAM`: one table per metric (and combination of the
    other parameters), its warnings under it."""
    e = result.dataset.experiment
    console.print(
        safe_text(f"{e.name} (experiment {e.id})", "bold", one_line=True)
        + safe_text(f" — scaling with {result.param}", one_line=True)
    )
    for table in scaling_tables(result):
        _print(console, table.table, words=False)
        for line in table.notes:
            console.print(Text("warning: ", style="yellow") + safe_text(line))
    console.print(safe_text(method_line(result), "dim"))
    for n in result.notes:
        if not n.metric:
            console.print(Text("warning: ", style="yellow") + safe_text(n.warning.message))
