"""Large tables drawn straight to rich segments, as rich would draw them.

rich lays out and renders a table through a renderable per cell (padding, text, lines,
alignment): ~10 s of CPU for the 8,000 rows of an 80,000-run comparison's summaries. The
tables perflab prints when they fit the terminal are simple — plain text cells, no
wrapping, one box style — so their lines are built here, segment for segment what rich
yields for the same table (header row bold and bottom-aligned, cells top-aligned, a rule
before the footer; `tests/test_compare_table_width.py` compares the bytes, colours
included). Tables that must be folded to fit are left to rich."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment, Segments
from rich.style import Style

#: The box of every perflab table (rich's default for `rich.table.Table`).
BOX = box.HEAVY_HEAD
HEADER_STYLE = "bold"


@dataclass(frozen=True)
class Grid:
    """A table's text: ``headers[j]`` and ``rows[i][j]`` as (text, style), lines split by
    ``\\n``; ``justify[j]`` "left" or "right"; a rule after row ``rule_after`` (-1: none)."""

    headers: Sequence[str]
    justify: Sequence[str]
    rows: Sequence[Sequence[tuple[str, str]]]
    rule_after: int = -1

    @cached_property
    def widths(self) -> list[int]:
        """Each column's width inside its padding: its longest line."""
        return [
            max([longest_line(self.headers[j])] + [longest_line(row[j][0]) for row in self.rows])
            for j in range(len(self.headers))
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
    out: list[Segment] = [Segment(b.get_top(outer)), Segment.line()]
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
    out += [Segment(b.get_row(outer, "head", edge=True)), Segment.line()]
    plain = _plain_rows(grid.rows, widths, grid.justify)
    null = Style.null()
    for i, row in enumerate(grid.rows):
        edges = (
            (b.foot_left, b.foot_vertical, b.foot_right)
            if i == len(grid.rows) - 1
            else (b.mid_left, b.mid_vertical, b.mid_right)
        )
        lines = plain[i]
        if lines is not None:  # what _row makes of such a row: a segment per line
            for cells in lines:
                out += [Segment(edges[0] + edges[1].join(cells) + edges[2], null), Segment.line()]
        else:
            out += _row(row, widths, grid.justify, null, styles, edges, bottom=False)
        if i == grid.rule_after and i < len(grid.rows) - 1:
            out += [Segment(b.get_row(outer, "row", edge=True)), Segment.line()]
    out += [Segment(b.get_bottom(outer)), Segment.line()]
    return Segments(out)


def _plain_rows(
    rows: Sequence[Sequence[tuple[str, str]]], widths: Sequence[int], justify: Sequence[str]
) -> list[list[tuple[str, ...]] | None]:
    """Each row's lines, each a tuple of its cells' pieces (``" text "`` padded to the
    column's width, justified; blank below a cell's last line), when none of its cells is
    styled; None for a row with a styled cell (`_row` draws it). Made a column at a time,
    as a large table's summaries (thousands of rows) are nearly all unstyled."""
    pieces: list[list[str]] = []
    styled = [False] * len(rows)
    tall: dict[int, dict[int, list[str]]] = {}  # row → column → the pieces of its lines
    for j, (column, width, how) in enumerate(zip(zip(*rows), widths, justify)):
        texts = [text for text, _ in column]
        marks = [bool(style) for _, style in column]
        if any(marks):
            styled = [a or b for a, b in zip(styled, marks)]
        if "\n" in "".join(texts):
            for i, text in enumerate(texts):
                if "\n" in text:
                    tall.setdefault(i, {})[j] = _pieces(text.split("\n"), width, how)
        pieces.append(_pieces(texts, width, how))
    out: list[list[tuple[str, ...]] | None] = []
    for i, cells in enumerate(zip(*pieces)):
        if styled[i]:
            out.append(None)
        elif i not in tall:
            out.append([cells])
        else:
            lines = [tall[i].get(j, [cell]) for j, cell in enumerate(cells)]
            height = max(len(cell_lines) for cell_lines in lines)
            blank = [" " * (w + 2) for w in widths]
            out.append(
                [
                    tuple(ls[k] if k < len(ls) else blank[j] for j, ls in enumerate(lines))
                    for k in range(height)
                ]
            )
    return out


def _pieces(texts: list[str], width: int, how: str) -> list[str]:
    """Each one-line text as a cell's piece: a space, the text padded to ``width`` (on the
    left when ``how`` is "right", the text's trailing spaces dropped), a space."""
    if how == "right":
        texts = [t.rstrip() for t in texts]
    if "".join(texts).isascii():  # a character per terminal cell
        pad = [" " * (width - len(t)) for t in texts]
    else:
        pad = [" " * (width - _cells(t)) for t in texts]
    if how == "right":
        return [f" {p}{t} " for p, t in zip(pad, texts)]
    return [f" {t}{p} " for p, t in zip(pad, texts)]


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
            drawn_lines += [Segment(left + divider.join(parts) + right, null), Segment.line()]
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
        out += [Segment(plain + right, null), Segment.line()]
    return out
