"""Large tables drawn straight to rich segments, as rich would draw them.

rich lays out and renders a table through a renderable per cell (padding, text, lines,
alignment): ~10 s of CPU for the 8,000 rows of an 80,000-run comparison's summaries. The
tables perflab prints when they fit the terminal are simple — plain text cells, no
wrapping, one box style — so their lines are built here, segment for segment what rich
yields for the same table (header row bold and bottom-aligned, cells top-aligned, a rule
before the footer; `tests/cli/test_compare_table_width.py` compares the bytes, colours
included). Tables that must be folded to fit are left to rich."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from operator import methodcaller

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment, Segments
from rich.style import Style

#: The line break after every line drawn (one segment, shared: `Segment.line()` makes one
#: per call, 14,000 for a large comparison's summaries).
_NEWLINE = Segment.line()

#: The box of every perflab table (rich's default for `rich.table.Table`).
BOX = box.HEAVY_HEAD
HEADER_STYLE = "bold"


@dataclass(frozen=True)
class Grid:
    """A table's text by column: ``headers[j]``, and ``texts[j][i]`` with its style
    ``styles[j][i]`` (``styles[j]`` None: column ``j`` unstyled), lines split by ``\\n``;
    ``justify[j]`` "left" or "right"; a rule after row ``rule_after`` (-1: none). By
    column, as it is laid out and drawn: a large table is thousands of rows of few columns."""

    headers: Sequence[str]
    justify: Sequence[str]
    texts: Sequence[Sequence[str]]
    styles: Sequence[Sequence[str] | None]
    rule_after: int = -1

    @cached_property
    def rows(self) -> list[tuple[tuple[str, str], ...]]:
        """``rows[i][j]`` = (text, style): the grid a row at a time."""
        styles = [s if s is not None else [""] * len(t) for t, s in zip(self.texts, self.styles)]
        return list(zip(*(list(zip(t, s)) for t, s in zip(self.texts, styles))))

    @property
    def height(self) -> int:
        """The number of rows."""
        return len(self.texts[0]) if self.texts else 0

    @cached_property
    def widths(self) -> list[int]:
        """Each column's width inside its padding: its longest line."""
        return [
            max([longest_line(header)] + [longest_line(text) for text in texts])
            for header, texts in zip(self.headers, self.texts)
        ]


def longest_line(text: str) -> int:
    if "\n" not in text:
        return _cells(text)
    return max(_cells(line) for line in text.split("\n"))


def _cells(text: str) -> int:
    """The terminal cells ``text`` takes (rich's `cell_len`, without its cost for ASCII)."""
    return len(text) if text.isascii() else cell_len(text)


def segments(console: Console, grid: Grid) -> Segments:
    """The table's lines as rich draws them (see the module's docstring)."""
    widths = grid.widths
    outer = [w + 2 for w in widths]
    b = BOX.substitute(console.options, safe=console.safe_box)
    header = console.get_style(HEADER_STYLE)
    styles: dict[tuple[Style, str], Style] = {}
    out: list[Segment] = [Segment(b.get_top(outer)), _NEWLINE]
    head = [(text, "") for text in grid.headers]
    out += _row(
        head,
        widths,
        grid.justify,
        header,
        styles,
        (b.head_left, b.head_vertical, b.head_right),
        bottom=True,
    )
    out += [Segment(b.get_row(outer, "head", edge=True)), _NEWLINE]
    mid, foot = (
        (b.mid_left, b.mid_vertical, b.mid_right),
        (b.foot_left, b.foot_vertical, b.foot_right),
    )
    plain = _plain_rows(grid, widths, mid, foot)
    null = Style.null()
    last = grid.height - 1
    run: list[str] = []  # unstyled lines in a row: printed as one segment (no escape codes)
    for i, lines in enumerate(plain):
        if lines is not None:
            run += lines
        else:
            if run:
                out += [Segment("\n".join(run), null), _NEWLINE]
                run = []
            edges = foot if i == last else mid
            out += _row(grid.rows[i], widths, grid.justify, null, styles, edges, bottom=False)
        if i == grid.rule_after and i < last:
            run.append(b.get_row(outer, "row", edge=True))
    run.append(b.get_bottom(outer))
    out += [Segment("\n".join(run), null), _NEWLINE]
    return Segments(out)


def _plain_rows(
    grid: Grid,
    widths: Sequence[int],
    edges: tuple[str, str, str],
    last_edges: tuple[str, str, str],
) -> list[list[str] | None]:
    """Each row's lines drawn between ``edges`` (the last row's between ``last_edges``):
    its cells' pieces (the text padded to the column's width, justified; blank below a
    cell's last line; a space on either side), when none of its cells is styled; None for a row with a styled cell
    (`_row` draws it). Made a column at a time, as a large table's summaries (thousands of
    rows) are nearly all unstyled."""
    pieces: list[list[str]] = []
    styled = [False] * grid.height
    tall: dict[int, dict[int, list[str]]] = {}  # row → column → the pieces of its lines
    for j, (texts, marks, width, how) in enumerate(
        zip(grid.texts, grid.styles, widths, grid.justify)
    ):
        if marks is not None:
            styled = [a or bool(b) for a, b in zip(styled, marks)]
        column = _pieces(list(texts), width, how)
        if "\n" in "".join(texts):
            made: dict[str, list[str]] = {}  # (a table repeats its tall cells: "base\n(baseline)")
            for i, text in enumerate(texts):
                if "\n" in text:
                    if text not in made:
                        made[text] = _pieces(text.split("\n"), width, how)
                    tall.setdefault(i, {})[j] = made[text]
                    column[i] = made[text][0]  # its first line; the others drawn below
        pieces.append(column)
    left, divider, right = _spaced(edges)
    out: list[list[str] | None] = [
        None if styled[i] else [left + divider.join(cells) + right]
        for i, cells in enumerate(zip(*pieces))
    ]
    blank = [" " * w for w in widths]

    def below(lines: dict[int, list[str]], edges: tuple[str, str, str]) -> list[str]:
        """The lines of a tall row under its first: its tall cells' next lines, blank around."""
        left, divider, right = _spaced(edges)
        drawn = []
        for k in range(1, max(len(cell_lines) for cell_lines in lines.values())):
            line = blank.copy()
            for j, cell_lines in lines.items():
                if k < len(cell_lines):
                    line[j] = cell_lines[k]
            drawn.append(left + divider.join(line) + right)
        return drawn

    # the lines under a first line: the same for every row with the same tall cells (each
    # cell's pieces are made once per text: the same list, `id` tells them apart)
    under: dict[tuple[int, ...], list[str]] = {}
    for i, lines in tall.items():
        first = out[i]
        if first is not None:
            key = tuple(id(cell_lines) for cell_lines in lines.values())
            if key not in under:
                under[key] = below(lines, edges)
            first += under[key]
    last = len(out) - 1
    if out and out[last] is not None and last_edges != edges:  # the last row between its own
        left, divider, right = _spaced(last_edges)
        drawn = [left + divider.join(column[last] for column in pieces) + right]
        out[last] = drawn + below(tall[last], last_edges) if last in tall else drawn
    return out


def _spaced(edges: tuple[str, str, str]) -> tuple[str, str, str]:
    """A row's edges and dividers with the space each cell has on either side."""
    left, divider, right = edges
    return left + " ", " " + divider + " ", " " + right


def _pieces(texts: list[str], width: int, how: str) -> list[str]:
    """Each one-line text padded to ``width`` terminal cells: on the left when ``how`` is
    "right" (the text's trailing spaces dropped), else on the right."""
    right = how == "right"
    if right and any(map(_ENDS_WITH_SPACE, texts)):
        texts = [t.rstrip() for t in texts]
    if "".join(texts).isascii():  # a character per terminal cell: str's own padding
        return list(map(str.rjust if right else str.ljust, texts, repeat(width)))
    pad = [" " * (width - _cells(t)) for t in texts]
    if right:
        return [p + t for p, t in zip(pad, texts)]
    return [t + p for p, t in zip(pad, texts)]


_ENDS_WITH_SPACE = methodcaller("endswith", " ")


def _row(
    cells: Sequence[tuple[str, str]],
    widths: Sequence[int],
    justify: Sequence[str],
    base: Style,
    styles: dict[tuple[Style, str], Style],
    edges: tuple[str, str, str],
    *,
    bottom: bool,
) -> list[Segment]:
    """One table row: each cell's lines padded and justified, aligned to the row's height
    (top, or ``bottom`` for the header), between the box's edges. Unstyled neighbours are
    joined into one segment (printed the same: no escape codes either way), styled ones are
    kept apart as rich keeps them."""
    left, divider, right = edges
    null = Style.null()
    if not base and not any(style_name for _, style_name in cells):
        # unstyled cells (most rows of a large table): what the general case below joins
        # into one segment per line, made directly
        split = [text.split("\n") for text, _ in cells]
        height = max(len(texts) for texts in split)
        drawn_lines: list[Segment] = []
        for k in range(height):
            parts = []
            for texts, width, how in zip(split, widths, justify):
                at = k - (height - len(texts) if bottom else 0)
                if not 0 <= at < len(texts):
                    parts.append(" " * (width + 2))
                    continue
                line = texts[at].rstrip() if how == "right" else texts[at]
                pad = " " * (width - _cells(line))
                parts.append(f" {pad}{line} " if how == "right" else f" {line}{pad} ")
            drawn_lines += [Segment(left + divider.join(parts) + right, null), _NEWLINE]
        return drawn_lines
    lines = [text.split("\n") for text, _ in cells]
    height = max(len(ls) for ls in lines)
    drawn: list[list[list[tuple[str, Style]]]] = []
    for (_, style_name), cell_lines, width, how in zip(cells, lines, widths, justify):
        style = styles.get((base, style_name))
        if style is None:
            style = styles[base, style_name] = base + (
                Style.parse(style_name) if style_name else Style.null()
            )
        rendered = []
        for line in cell_lines:
            if how == "right":
                line = line.rstrip()
                line = " " * (width - _cells(line)) + line
            else:
                line = line + " " * (width - _cells(line))
            rendered.append([(" ", base), (line, style), (" ", base)])
        blank = [(" " * (width + 2), base)]
        fill = [blank] * (height - len(rendered))
        drawn.append(fill + rendered if bottom else rendered + fill)
    out: list[Segment] = []
    for k in range(height):
        plain = left  # unstyled text not yet emitted
        for j, cell in enumerate(drawn):
            if j:
                plain += divider
            for text, style in cell[k]:
                if style:
                    out += (
                        [Segment(plain, null), Segment(text, style)]
                        if plain
                        else [Segment(text, style)]
                    )
                    plain = ""
                else:
                    plain += text
        out += [Segment(plain + right, null), _NEWLINE]
    return out
