"""The terminal layout computes each table's width instead of asking rich to measure it,
and draws tables that fit straight to segments instead of through rich's table (both cost
seconds on a 2,000-row comparison): the width must be rich's and the bytes printed rich's,
colours included, for every layout, on tables like perflab's and odd ones."""

from __future__ import annotations

import io
import random
import re
from dataclasses import replace

import pytest
from perflab.report.blocks import Cell, Table
from perflab.report.terminal_layout import Layout, _build, _Columns, lay_out, safe_texts, width_of
from perflab.stats import Verdict
from rich.cells import cell_len
from rich.console import Console

WORDS = ["n=1", "memcached_get_p99", "+12.3% [+1.0, +20.1]", "NS", "−4.1% [−9.0, −0.5]",
         "日本語のセル", "a b_c d", "", "x" * 40, "2.50 ms (±3%)", "cell with [bracket] (paren)"]  # fmt: skip
VERDICTS = [None, Verdict.BETTER, Verdict.WORSE, Verdict.WITHIN_NOISE, Verdict.NOT_SIGNIFICANT]


def _table(rng: random.Random) -> Table:
    ncols = rng.randint(1, 6)

    def cell() -> Cell:  # fmt: skip
        return Cell(rng.choice(WORDS), rng.choice(VERDICTS))

    return Table(
        title="t",
        columns=tuple(rng.choice(WORDS) or "h" for _ in range(ncols)),
        rows=tuple(tuple(cell() for _ in range(ncols)) for _ in range(rng.randint(0, 8))),
        numeric=tuple(rng.random() < 0.5 for _ in range(ncols)),
        footer=tuple(tuple(cell() for _ in range(ncols)) for _ in range(rng.randint(0, 1))),
    )


@pytest.mark.parametrize("seed", range(40))
def test_computed_width_is_richs_for_every_layout(seed):
    rng = random.Random(seed)
    console = Console(width=80, file=open("/dev/null", "w"), color_system=None)
    table = _table(rng)
    base = Layout(tuple(range(len(table.columns))))
    layouts = [
        base,
        replace(base, cell_lines=2, lead_only=1),
        replace(base, wrap_headers=True),
        replace(base, wrap_headers=True, cell_lines=2),
        replace(base, columns=base.columns[1:] or base.columns),
    ]
    for layout in layouts:
        for words in (False, True):
            built = _build(table, layout, safe_texts(table, words))
            assert built.width == width_of(console, built.rich_table()), (layout, words)
            # and computed from the columns alone, without building the table
            columns = _Columns(table, safe_texts(table, words))
            assert columns.width(layout) == built.width, (layout, words)
            for colors in (None, "standard", "truecolor"):
                drawn, by_rich = (
                    _printed(built.renderable, colors),
                    _printed(built.rich_table, colors),
                )
                assert drawn == by_rich, (layout, words, colors)


def _printed(make, colors) -> str:
    out = io.StringIO()
    console = Console(width=400, file=out, color_system=colors, force_terminal=colors is not None)
    r = make(console) if make.__name__ == "renderable" else make()
    console.print(r)
    return out.getvalue()


def test_a_table_laid_out_fits_and_a_wider_one_is_split():
    rows = tuple((Cell(f"n={i}"), Cell("+12.3% [+1.0, +20.1]", Verdict.BETTER)) for i in range(50))
    table = Table("t", ("cell", "metric"), rows, (False, False))
    wide = Table("t", ("cell",) + tuple(f"metric_{k}" for k in range(6)),
                 tuple(r + (r[1],) * 5 for r in rows), (False,) * 7)  # fmt: skip
    out = io.StringIO()
    console = Console(width=80, file=out, color_system=None)
    assert len(lay_out(console, table).tables) == 1
    laid = lay_out(console, wide)
    assert len(laid.tables) > 1
    for t in laid.tables:
        console.print(t)
    lines = out.getvalue().splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert max(cell_len(line) for line in lines) > 60  # as many columns as fit, per table
    assert sorted(set(re.findall(r"metric_\d", out.getvalue()))) == [
        f"metric_{k}" for k in range(6)
    ]
    assert len(re.findall(r"┃ n=49 ", out.getvalue().replace("│", "┃"))) == len(laid.tables)


def test_a_plain_table_drawn_column_by_column_is_richs():
    """Rows of one-line unstyled cells (a large comparison's summaries) are drawn a
    column at a time (`terminal_draw._plain_rows`): the bytes must still be rich's."""
    from perflab.report.terminal_draw import _plain_rows

    rng = random.Random(3)
    numbers = ["48,551", "812.3", "8.435", "0.00469", "–", "0", "1.000e-07", "12 ", "日本"]
    rows = tuple(
        (
            Cell(f"size={i}"),
            Cell(rng.choice(["base", "new (mglru)"])),
            *(Cell(rng.choice(numbers)) for _ in range(4)),
        )
        for i in range(30)
    )
    table = Table("t", ("cell", "variant", "n", "mean", "± MoE", "max"), rows, (False, False) + (True,) * 4,
                  footer=((Cell("all 30 cells (geometric mean)"), Cell("new"), *(Cell("1.0") for _ in range(4))),))  # fmt: skip
    one_line, footer_wrapped = Layout(tuple(range(6))), Layout(tuple(range(6)), cell_lines=2)
    for layout in (one_line, footer_wrapped):
        built = _build(table, layout, safe_texts(table, False))
        plain = _plain_rows(built.grid, built.grid.widths, ("│", "│", "│"), ("│", "│", "│"))
        # rows with a cell on several lines (a footer's label, "new (mglru)" broken) as tall
        heights = [max(text.count("\n") + 1 for text, _ in row) for row in built.grid.rows]
        assert [len(lines) for lines in plain] == heights
        assert (max(heights) > 1) == (layout == footer_wrapped) and min(heights) == 1
        for colors in (None, "truecolor"):
            assert _printed(built.renderable, colors) == _printed(built.rich_table, colors)


def test_numbers_formatted_in_one_loop_are_fmt_numbers():
    import math

    from perflab.report.numbers import fmt_number, fmt_numbers

    rng = random.Random(4)
    xs = [0.0, -0.0, math.nan, 1e-4, 9.9999e-5, 1e4, 9999.99, 9999.5, -1e4, 1e300, -1e-300, 5e-324]
    xs += [rng.choice([-1, 1]) * 10 ** rng.uniform(-8, 8) for _ in range(20_000)]
    xs += [float(rng.randint(-100, 100000)) for _ in range(2000)]
    assert fmt_numbers(xs) == [fmt_number(x) for x in xs]


@pytest.mark.parametrize("seed", range(30))
def test_a_table_given_by_column_is_the_table_given_by_row(seed):
    """`Table.of_columns` (the summaries: plain cells kept as their texts) reads, lays out
    and prints as the same table given a row at a time."""
    rng = random.Random(seed)
    by_row = replace(_table(rng), footer=())
    body = [
        [c.text if c.verdict is None and rng.random() < 0.7 else c for c in column]
        for column in zip(*by_row.rows)
    ] or [[] for _ in by_row.columns]
    by_column = Table.of_columns("t", by_row.columns, body, by_row.numeric)
    assert by_column.rows == by_row.rows and by_column.height == by_row.height
    for j in range(len(by_row.columns)):
        assert by_column.column_texts(j) == by_row.column_texts(j)
        assert by_column.column_verdicts(j) == by_row.column_verdicts(j)
    for width in (30, 60, 200):
        for words in (False, True):
            printed = []
            for table in (by_row, by_column):
                out = io.StringIO()
                console = Console(
                    width=width, file=out, color_system="standard", force_terminal=True
                )
                for t in lay_out(console, table, words=words).tables:
                    console.print(t)
                printed.append(out.getvalue())
            assert printed[0] == printed[1], (width, words)
