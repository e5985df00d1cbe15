"""The one document model of every output, independent of the format.

`perflab.report.tables` builds the comparison's tables (`Table`, `Cell`) and the
comparison as a `Section` (`perflab compare --format markdown` and its exports);
`perflab.report.document` arranges a whole report as `Section`s of these blocks. The HTML
(`html.py`) and Markdown (`markdown.py`) writers draw every block kind, the terminal
(`terminal.py`) draws the tables. All text in them is plain text (never markup): each
writer escapes it for its own format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple, Union

from perflab.stats import Verdict
from perflab.stats.records import made

if TYPE_CHECKING:  # matplotlib loads with the plots, not with every table
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Span:
    """A piece of running text; ``verdict`` colours it, ``code`` sets it in monospace,
    ``em`` in italics."""

    text: str
    verdict: Verdict | None = None
    strong: bool = False
    code: bool = False
    em: bool = False


@dataclass(frozen=True)
class Para:
    spans: tuple[Span, ...]

    @classmethod
    def of(cls, *parts: str | Span) -> Para:
        return cls(tuple(p if isinstance(p, Span) else Span(p) for p in parts))


@dataclass(frozen=True)
class Bullets:
    items: tuple[Para, ...]


class Cell(NamedTuple):
    """One table cell. A named tuple, not a dataclass: a large comparison's summaries make
    ~50,000 of them, and a tuple is made at a quarter of a frozen dataclass's cost."""

    text: str
    verdict: Verdict | None = None
    color: str | None = None  # a variant's colour: a swatch before the text
    title: str | None = None  # a tooltip (HTML only)


@dataclass(frozen=True)
class Table:
    """``numeric[i]``: right-align column i; ``highlight[r]``: row r is a difference to notice;
    ``footer``: rows that summarize the rows above them, drawn under a rule (e.g. the sweep's
    geometric mean); ``css_class``: the HTML table's class (other writers ignore it)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    numeric: tuple[bool, ...]
    highlight: tuple[bool, ...] = ()
    css_class: str = ""
    note: str = ""
    footer: tuple[tuple[Cell, ...], ...] = ()

    @classmethod
    def of_columns(
        cls,
        title: str,
        columns: tuple[str, ...],
        body: Sequence[Sequence[Cell | str]],
        numeric: tuple[bool, ...],
    ) -> Table:
        """A table given a column at a time: ``body[j][i]`` is row ``i``'s cell in column
        ``j``, a plain text as the string itself. A large comparison's summaries are
        thousands of rows of plain numbers, made and drawn by column: their cells and rows
        are made only for a writer that asks for them (`rows`)."""
        return made(
            _ColumnTable,
            {
                "title": title,
                "columns": columns,
                "numeric": numeric,
                "highlight": (),
                "css_class": "",
                "note": "",
                "footer": (),
                "body": [list(column) for column in body],
            },
        )

    @property
    def height(self) -> int:
        """The number of body rows (the footer's not counted)."""
        return len(self.rows)

    def column_texts(self, j: int) -> list[str]:
        """Column ``j``'s body texts."""
        return [row[j].text for row in self.rows]

    def column_verdicts(self, j: int) -> list[Verdict | None] | None:
        """Column ``j``'s body verdicts; None when no cell of it has one."""
        verdicts = [row[j].verdict for row in self.rows]
        return verdicts if any(verdicts) else None


class _ColumnTable(Table):
    """`Table.of_columns`: the body kept by column (``body``), its rows made when read."""

    body: list[list[Cell | str]]

    @cached_property
    def rows(self) -> tuple[tuple[Cell, ...], ...]:
        cells = [[c if isinstance(c, Cell) else Cell(c) for c in column] for column in self.body]
        return tuple(zip(*cells))

    @property
    def height(self) -> int:
        return len(self.body[0]) if self.body else 0

    def column_texts(self, j: int) -> list[str]:
        column = self.body[j]
        if _plain(column):
            return list(column)  # type: ignore[arg-type]  # (all texts: told by _plain)
        return [c if isinstance(c, str) else c.text for c in column]

    def column_verdicts(self, j: int) -> list[Verdict | None] | None:
        column = self.body[j]
        if _plain(column):
            return None
        verdicts = [None if isinstance(c, str) else c.verdict for c in column]
        return verdicts if any(verdicts) else None


def _plain(column: list[Cell | str]) -> bool:
    """Whether every cell of ``column`` is a plain text (the types gathered in C: a summary
    column is thousands of texts)."""
    return set(map(type, column)) <= {str}


@dataclass(frozen=True)
class Plot:
    """A matplotlib figure, drawn when a writer asks (``make``), with the words around it.

    key: stable file-name stem (``02-change-ops_per_sec``); alt: what it shows, for
    screen readers and for a Markdown reader without images.
    """

    key: str
    title: str
    caption: str
    alt: str
    make: Callable[[], Figure]


@dataclass(frozen=True)
class FlameGraph:
    """An interactive SVG flame graph (inferno's, with its search and zoom script): inline
    in HTML (in a sandboxed frame of its own), a file beside a Markdown report."""

    key: str  # file-name stem, as a Plot's
    title: str
    caption: str
    svg: str


@dataclass(frozen=True)
class Code:
    text: str
    language: str = ""
    title: str = ""


@dataclass(frozen=True)
class Details:
    """Collapsed content (HTML ``<details>``); ``summary`` is always visible."""

    summary: str
    blocks: tuple[Block, ...]


Block = Union[Para, Bullets, Table, Plot, Code, Details, FlameGraph, "Section"]


@dataclass(frozen=True)
class Section:
    id: str  # HTML anchor, [a-z0-9-]
    title: str
    blocks: tuple[Block, ...] = field(default=())
