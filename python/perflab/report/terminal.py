"""The terminal view of a comparison: rich tables, green = better, red = worse."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from perflab.analysis.compare import CompareResult
from perflab.analysis.scaling import ScalingResult
from perflab.report.scaling_table import method_line, scaling_tables
from perflab.report.tables import TableModel, note_lines, summary_tables, tldr_table
from perflab.stats import Verdict

_STYLE = {Verdict.BETTER: "bold green", Verdict.WORSE: "bold red", Verdict.WITHIN_NOISE: "yellow"}
_WORD = {Verdict.BETTER: " better", Verdict.WORSE: " worse"}


def _rich(model: TableModel, words: bool) -> Table:
    t = Table(header_style="bold")
    for name, numeric in zip(model.columns, model.numeric):
        t.add_column(name, justify="right" if numeric else "left", no_wrap=True)
    for i, row in enumerate(model.rows + model.summary_rows):
        cells = []
        for c in row:
            text = c.text + (_WORD.get(c.verdict, "") if words and c.verdict else "")
            cells.append(Text(text, style=_STYLE.get(c.verdict, "")))
        t.add_row(*cells, end_section=i == len(model.rows) - 1 and bool(model.summary_rows))
    return t


def _print(console: Console, model: TableModel, words: bool) -> None:
    console.print()
    console.print(Text(model.title, style="bold"))
    console.print(_rich(model, words))


def render_terminal(result: CompareResult, console: Console, *, summaries: bool = True) -> None:
    e = result.dataset.experiment
    console.print(Text(f"{e.name} (experiment {e.id})", style="bold") +
                  Text(f" — {e.description}" if e.description else ""))
    _print(console, tldr_table(result), words=True)
    if result.correction_statement:
        console.print(Text(result.correction_statement, style="dim"))
    if summaries:
        for model in summary_tables(result):
            _print(console, model, words=False)
    for line in note_lines(result):
        console.print(Text("warning: ", style="yellow") + Text(line))


def render_scaling_terminal(result: ScalingResult, console: Console) -> None:
    """`perflab compare ID --scaling PARAM`: one table per metric (and combination of the
    other parameters), its warnings under it."""
    e = result.dataset.experiment
    console.print(Text(f"{e.name} (experiment {e.id})", style="bold") +
                  Text(f" — scaling with {result.param}"))
    for table in scaling_tables(result):
        _print(console, table.model, words=False)
        for line in table.notes:
            console.print(Text("warning: ", style="yellow") + Text(line))
    console.print(Text(method_line(result), style="dim"))
    for n in result.notes:
        if not n.metric:
            console.print(Text("warning: ", style="yellow") + Text(n.warning.message))
