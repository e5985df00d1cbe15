"""A `blocks.Table` laid out to fit the terminal's width, losing nothing silently.

Tried in order, each only if the table is still too wide: the leading cells on two lines
(a footer's label as wide as its column's header); long headers wrapped to the
width of their column's cells (at spaces, else after ``_``); long cells on two lines
(before `` [``, `` (`` or the verdict's word; the leading columns first, the footer's
label as wide as the cells above it); optional columns left out (``drop``: the summaries' median, min and
max — one line says so and how to see them); the value columns split over several tables,
the leading columns repeated in each; and last, cells folded by rich (every character
kept). Every string is passed through `safe_text` first."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.text import Text

from perflab.report.blocks import Table
from perflab.report.safe_text import safe_text, terminal_safe
from perflab.report.terminal_draw import BOX, HEADER_STYLE, Grid, longest_line, segments
from perflab.stats import Verdict

if TYPE_CHECKING:  # (rich's table draws only the tables that must be folded: loaded for them)
    from rich import table as rich_table

STYLE: dict[Verdict | None, str] = {
    Verdict.BETTER: "bold green",
    Verdict.WORSE: "bold red",
    Verdict.WITHIN_NOISE: "yellow",
}
WORD = {Verdict.BETTER: " better", Verdict.WORSE: " worse"}

#: The columns a narrow terminal leaves out of the summaries, in this order.
OPTIONAL_SUMMARY_COLUMNS = ("median", "min", "max")


@dataclass(frozen=True)
class Layout:
    columns: tuple[int, ...]  # the indices of the table's columns shown
    wrap_headers: bool = False  # long headers on lines as wide as the column's cells
    cell_lines: int = 1  # 2: long cells on two lines (``lead_only``: the leading columns')
    lead_only: int = 0  # > 0: only cells in the first ``lead_only`` columns are broken
    fold: bool = False  # rich folds cells to fit (the last resort)


@dataclass(frozen=True)
class Laid:
    """What `lay_out` makes: rich tables to print in order, and the columns it left out."""

    tables: list[RenderableType]
    dropped: tuple[str, ...] = ()


def _wrap(text: str, width: int) -> str:
    """``text`` on lines of at most ``width`` (or its longest piece), broken after a space
    or an ``_`` — never inside a word."""
    if "\n" in text:
        return "\n".join(_wrap(line, width) for line in text.split("\n"))
    if len(text) <= width:
        return text
    pieces = re.findall(r"[^ _]*[ _]*", text)
    width = max(width, *(len(p.rstrip()) for p in pieces))
    lines = [""]
    for piece in filter(None, pieces):
        if lines[-1] and len((lines[-1] + piece).rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


def _cell_break(text: str) -> str:
    """A cell on two lines before its verdict's word, its interval or its parenthesis."""
    if " " not in text:  # a number
        return text
    for word in (" better", " worse", " (within noise)"):
        if text.endswith(word) and len(text) > len(word) + 1:
            return text[: -len(word)] + "\n" + word.strip()
    cuts = [i for i in (text.find(" ["), text.find(" (")) if i > 0]
    if not cuts:
        return text
    cut = min(cuts, key=lambda i: max(i, len(text) - i))
    return text[:cut] + "\n" + text[cut + 1 :]


@dataclass(frozen=True)
class _Built:
    """A table's text as laid out, the width it prints at (unlimited), and whether rich
    must fold its cells to fit."""

    grid: Grid
    fold: bool

    @property
    def width(self) -> int:
        """Each column's longest line and its padding (1 + 1), and the box's edges and
        rules: the width rich prints the table at. Computed, not measured by rich (that
        took seconds for a 2,000-row table, once per layout tried)."""
        return sum(w + 2 for w in self.grid.widths) + len(self.grid.headers) + 1

    def rich_table(self) -> rich_table.Table:
        from rich import table as rich_table

        t = rich_table.Table(header_style=HEADER_STYLE, box=BOX)
        for header, how in zip(self.grid.headers, self.grid.justify):
            t.add_column(Text(header), justify=how, no_wrap=not self.fold, overflow="fold")  # type: ignore[arg-type]
        for i, row in enumerate(self.grid.rows):
            t.add_row(
                *(safe_text(text, style) for text, style in row),
                end_section=i == self.grid.rule_after,
            )
        return t

    def renderable(self, console: Console) -> RenderableType:
        """What to print: the lines drawn directly (`terminal_draw`), or rich's table when
        it folds cells."""
        return self.rich_table() if self.fold else segments(console, self.grid)


def safe_texts(table: Table, words: bool) -> list[list[str]]:
    """Every cell's text by column (the body's, then the footer's) as printed on one line:
    with its verdict's word (``words``), terminal-safe. Made once per table, for every
    layout tried."""
    out = []
    for j in range(len(table.columns)):
        texts = table.column_texts(j) + [row[j].text for row in table.footer]
        if words:
            verdicts = table.column_verdicts(j)
            footer = [row[j].verdict for row in table.footer]
            if verdicts is not None or any(footer):
                every = (verdicts or [None] * table.height) + footer
                texts = [t + WORD.get(v, "") if v else t for t, v in zip(texts, every)]
        joined = "".join(texts)
        if not (joined.isascii() and joined.isprintable()):  # (most columns: nothing to escape)
            texts = [terminal_safe(t, one_line=True) for t in texts]
        out.append(texts)
    return out


class _Columns:
    """A table's cell texts by column, one line (``safe``: `safe_texts`) or broken on two
    (`_cell_break`), and their widths over the body rows: made once per column and form,
    whatever the number of layouts tried (each layout's width is then a sum over columns,
    not a pass over every row — 8,000 rows × 9 layouts for a large comparison's summaries)."""

    def __init__(self, table: Table, safe: list[list[str]]):
        self.table, self.safe, self.body = table, safe, table.height
        self._texts: dict[tuple[int, bool], list[str]] = {}
        self._lens: dict[tuple[int, bool], tuple[int, int]] = {}

    def texts(self, j: int, broken: bool) -> list[str]:
        """Column ``j``'s texts, the body's then the footer's."""
        key = (j, broken)
        if key not in self._texts:
            column = self.safe[j]
            # (`_cell_break` keeps a text without a space as it is: a column of numbers)
            if broken and " " in "".join(column):  # (a column repeats its texts: each broken once)
                broken_of = {t: _cell_break(t) for t in set(column)}
                column = [broken_of[t] for t in column]
            self._texts[key] = column
        return self._texts[key]

    def body_widths(self, j: int, broken: bool) -> tuple[int, int]:
        """(the longest line of the body's cells in characters, at least 4 — what headers and
        the footer's label wrap to —, and in terminal cells — what the column takes)."""
        key = (j, broken)
        if key not in self._lens:
            texts = self.texts(j, broken)
            if broken and texts is self.texts(j, False):  # (nothing broken: a column of numbers)
                self._lens[key] = self.body_widths(j, False)
                return self._lens[key]
            body = texts[: self.body]
            lines = "\n".join(body).split("\n") if broken else body  # (one-line texts unbroken)
            chars = max(map(len, lines), default=0)
            ascii_only = "".join(lines).isascii()
            cells = chars if ascii_only else max(map(longest_line, lines), default=0)
            self._lens[key] = (max(chars, 4), cells)
        return self._lens[key]

    def broken(self, layout: Layout, j: int) -> bool:
        return layout.cell_lines > 1 and (not layout.lead_only or j < layout.lead_only)

    def header(self, layout: Layout, j: int) -> str:
        name = terminal_safe(self.table.columns[j], one_line=True)
        if not layout.wrap_headers:
            return name
        return _wrap(name, self.body_widths(j, self.broken(layout, j))[0])

    def footer(self, layout: Layout, j: int) -> list[str]:
        """Column ``j``'s footer texts as laid out."""
        broken = self.broken(layout, j)
        texts = self.texts(j, broken)[self.body :]
        if layout.cell_lines > 1 and not self.table.numeric[j]:
            # the footer's label: as wide as the cells above, or the header kept whole
            header = 0 if layout.wrap_headers else len(self.table.columns[j])
            width = max(self.body_widths(j, broken)[0], 12, header)
            texts = [_wrap(t, width) for t in texts]
        return texts

    def column_widths(self, layout: Layout) -> list[int]:
        """Each column's longest line in terminal cells, its header's and footer's included
        (`Grid.widths` of the table built, without building it)."""
        out = []
        for j in layout.columns:
            cells = self.body_widths(j, self.broken(layout, j))[1]
            footer = [longest_line(t) for t in self.footer(layout, j)]
            out.append(max([longest_line(self.header(layout, j)), cells] + footer))
        return out

    def width(self, layout: Layout) -> int:
        """The width ``layout`` prints at (`_Built.width`)."""
        return sum(w + 2 for w in self.column_widths(layout)) + len(layout.columns) + 1


def _build(table: Table, layout: Layout, safe: list[list[str]] | _Columns) -> _Built:
    """``table`` (its cells' texts: `safe_texts`, or their `_Columns`) laid out as
    ``layout`` says."""
    cols = safe if isinstance(safe, _Columns) else _Columns(table, safe)
    column = {
        j: cols.texts(j, cols.broken(layout, j))[: cols.body] + cols.footer(layout, j)
        for j in layout.columns
    }
    grid = Grid(
        headers=[cols.header(layout, j) for j in layout.columns],
        justify=["right" if table.numeric[j] else "left" for j in layout.columns],
        texts=[column[j] for j in layout.columns],
        styles=[_styles(table, j) for j in layout.columns],
        rule_after=table.height - 1 if table.footer else -1,
    )
    grid.__dict__["widths"] = cols.column_widths(layout)  # known: not measured again
    return _Built(grid, layout.fold)


def _styles(table: Table, j: int) -> list[str] | None:
    """Column ``j``'s cells' styles by their verdicts (the body's, then the footer's); None
    when no cell has one."""
    body, footer = table.column_verdicts(j), [row[j].verdict for row in table.footer]
    if body is None and not any(footer):
        return None
    verdicts = (body or [None] * table.height) + footer
    return [STYLE.get(v, "") for v in verdicts]


def width_of(console: Console, t: rich_table.Table) -> int:
    """rich's own measure of a table's width (the reference `_Built.width` is tested against)."""
    return console.measure(t, options=console.options.update_width(100_000)).maximum


def _chunks(layout: Layout, lead: int, cols: _Columns, width: int) -> list[Layout] | None:
    """The value columns split over tables that each fit (the ``lead`` columns in every
    one), or None when one value column does not fit beside them."""
    head, rest = layout.columns[:lead], layout.columns[lead:]
    out: list[list[int]] = []
    for j in rest:
        trial = replace(layout, columns=head + tuple((out[-1] if out else []) + [j]))
        if out and cols.width(trial) <= width:
            out[-1].append(j)
            continue
        alone = replace(layout, columns=head + (j,))
        if cols.width(alone) > width:
            return None
        out.append([j])
    return [replace(layout, columns=head + tuple(c)) for c in out]


def lay_out(
    console: Console,
    table: Table,
    *,
    words: bool = False,
    lead: int = 1,
    drop: tuple[str, ...] = (),
) -> Laid:
    """``table`` as rich tables no wider than the console (see the module's docstring);
    ``lead``: how many leading columns (the cell, the variant) every split table repeats;
    ``drop``: the names of columns that may be left out."""
    width = console.width
    cols = _Columns(table, safe_texts(table, words))
    layout = Layout(tuple(range(len(table.columns))))
    two = replace(layout, wrap_headers=True, cell_lines=2)
    steps = [
        layout,
        replace(layout, cell_lines=2, lead_only=lead),  # the leading cells (a footer's label)
        replace(layout, wrap_headers=True),
        replace(two, lead_only=lead),
        two,
    ]
    for step in steps:
        if cols.width(step) <= width:
            return Laid([_build(table, step, cols).renderable(console)])
    layout = steps[-1]
    dropped: tuple[str, ...] = ()
    if drop:
        keep = tuple(j for j in layout.columns if table.columns[j] not in drop)
        dropped = tuple(table.columns[j] for j in layout.columns if j not in keep)
        layout = replace(layout, columns=keep)
        if cols.width(layout) <= width:
            return Laid([_build(table, layout, cols).renderable(console)], dropped)
    chunks = _chunks(layout, lead, cols, width)
    if chunks is not None and len(chunks) > 1:
        return Laid([_build(table, c, cols).renderable(console) for c in chunks], dropped)
    return Laid([_build(table, replace(layout, fold=True), cols).renderable(console)], dropped)


def dropped_line(dropped: tuple[str, ...], width: int) -> str:
    """The one line saying which columns a narrow terminal left out, and how to see them."""
    names = ", ".join(dropped[:-1]) + (" and " if len(dropped) > 1 else "") + dropped[-1]
    return (
        f"{names} left out to fit {width} columns: see them with a wider terminal "
        f"(COLUMNS=120) or --format markdown"
    )
