"""The terminal view of a comparison: the table blocks of `tables.py` and
`scaling_table.py` (`blocks.Table`) drawn as rich tables, green = better, red = worse,
fitted to the console's width (`terminal_layout.py`), the warnings grouped by kind
(`warning_groups.py`).

Every string (names, labels, notes) goes through `safe_text`: shown, never read as rich
markup or obeyed as a terminal control sequence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.segment import Segments
from rich.text import Text

from perflab.analysis.comparison_table import ComparisonTable
from perflab.report.blocks import Table
from perflab.report.safe_text import safe_text
from perflab.report.tables import na_footnotes, no_comparison_line, summary_tables, tldr_table
from perflab.report.terminal_layout import OPTIONAL_SUMMARY_COLUMNS, dropped_line, lay_out
from perflab.report.warning_groups import full_lines, grouped_lines, reading

if TYPE_CHECKING:  # (the scaling view's modules: imported when it is drawn)
    from perflab.analysis.scaling import ScalingResult


def _print(
    console: Console,
    table: Table,
    *,
    words: bool = False,
    lead: int = 1,
    drop: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """The table's title (wrapped at words) and the table, laid out to fit the console
    (`terminal_layout.lay_out`); returns the columns it left out."""
    console.print()
    console.print(safe_text(table.title, "bold", one_line=True))
    laid = lay_out(console, table, words=words, lead=lead, drop=drop)
    for t in laid.tables:
        # lines drawn directly fit the console already (the layout was chosen so): rich's
        # cropping of every line to its width would change nothing, for 0.1 s on 14,000 lines
        console.print(t, crop=not isinstance(t, Segments))
    return laid.dropped


def _warn(console: Console, line: str) -> None:
    console.print(Text("warning: ", style="yellow") + safe_text(line))


def render_terminal(
    result: ComparisonTable,
    console: Console,
    *,
    summaries: bool = True,
    verbose: bool = False,
    more: str = "",
) -> None:
    """The comparison for a terminal, every line within ``console.width``: the TLDR (its
    `n/a` cells footnoted, the cells perflab adjusted for something marked), the
    correction, the summaries (``summaries``), and the warnings that change how to read
    it — one line per kind, worst first; with ``verbose`` every warning in full, those
    that explain what perflab did too. ``more``: how to see every warning in full (said
    when the grouped lines leave one out)."""
    e = result.dataset.experiment
    console.print(
        safe_text(f"{e.name} (experiment {e.id})", "bold", one_line=True)
        + safe_text(f" — {e.description}" if e.description else "")
    )
    alone = no_comparison_line(result)
    if alone:  # one variant: its summaries are what there is to show
        console.print(safe_text(alone))
    else:
        tldr = tldr_table(result, marked=not verbose)
        lead = len(result.dataset.params or ["cell"]) + (len(result.candidates) > 1)
        _print(console, tldr, words=True, lead=lead)
        for line in na_footnotes(tldr):
            console.print(safe_text(line, "dim"))
    if result.correction_statement:
        console.print(safe_text(result.correction_statement, "dim"))
    if summaries or alone:
        dropped: tuple[str, ...] = ()
        for table in summary_tables(result):
            lead = len(result.dataset.params or ["cell"]) + 2  # the cell, the variant, n
            dropped = _print(console, table, lead=lead, drop=OPTIONAL_SUMMARY_COLUMNS) or dropped
        if dropped:
            console.print(safe_text(dropped_line(dropped, console.width), "dim"))
    more = more or f"perflab compare {e.id} --verbose"
    every = len(full_lines(result.notes))
    lines = (
        full_lines(result.notes) if verbose else grouped_lines(reading(result.notes), more, every)
    )
    for line in lines:
        _warn(console, line)


def render_scaling_terminal(result: ScalingResult, console: Console) -> None:
    """`perflab compare ID --scaling PARAM`: one table per metric (and combination of the
    other parameters), its warnings under it."""
    from perflab.report.scaling_table import method_line, scaling_tables

    e = result.dataset.experiment
    console.print(
        safe_text(f"{e.name} (experiment {e.id})", "bold", one_line=True)
        + safe_text(f" — scaling with {result.param}", one_line=True)
    )
    for table in scaling_tables(result):
        _print(console, table.table)
        for line in table.notes:
            _warn(console, line)
    console.print(safe_text(method_line(result), "dim"))
    for n in result.notes:
        if not n.metric:
            _warn(console, n.warning.message)
