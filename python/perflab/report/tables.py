"""The comparison's tables as document blocks (`blocks.Table` of `blocks.Cell`: plain
strings + verdicts), built from a ComparisonTable, and the whole comparison as one
`blocks.Section` (`compare_section`). Every output draws these same blocks: the terminal
(`terminal.py`), Markdown (`markdown.py`) and the report (`document.py` → HTML, Markdown)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.analysis.comparison_table import ComparedCell, ComparisonTable
from perflab.report.blocks import Block, Bullets, Cell, Para, Section, Span, Table
from perflab.report.numbers import (
    fmt_numbers,
    method_words,
    metric_header,
    tldr_text,
)

if TYPE_CHECKING:
    from perflab.stats import Summary

BASELINE_MARK = " (baseline)"


def variant_cell(text: str, colors: dict[str, str] | None) -> Cell:
    """A variant's name (``text``, maybe marked `BASELINE_MARK`) in the colour its plots
    use, when ``colors`` are given (the report; the terminal and Markdown show none)."""
    color = colors.get(text.removesuffix(BASELINE_MARK)) if colors else None
    return Cell(text, color=color)


def _param_headers(result: ComparisonTable) -> list[str]:
    return list(result.dataset.params) or ["cell"]


def _param_values(result: ComparisonTable, labels: dict[str, str], key: str) -> list[str]:
    params = result.dataset.params
    return [labels.get(p, "") for p in params] if params else ["all" if key == "-" else key]


def no_comparison_line(result: ComparisonTable) -> str | None:
    """What stands in for the TLDR of an experiment with one variant (a nightly run, a
    point of a series): nothing is compared inside it; None when there is a comparison."""
    if result.candidates:
        return None
    e = result.dataset.experiment
    return (
        f"one variant ({result.dataset.baseline}): nothing to compare inside experiment "
        f"{e.id}; its summaries follow. Compare it with another experiment: "
        f"perflab compare {e.id} OTHER"
    )


def tldr_table(result: ComparisonTable, *, marked: bool = False) -> Table:
    """Rows = cells (× candidate variant when there are several), columns = metrics; the
    footer: the geometric mean across the cells (the sweep), per candidate variant.
    ``marked``: the cells perflab adjusted for something carry `EXPLAINED_MARK`, with a
    line saying what (for a terminal, where such warnings are not shown)."""
    data = result.dataset
    many = len(result.candidates) > 1
    columns = _param_headers(result) + (["variant"] if many else [])
    columns += [metric_header(m.name, m.unit, m.better) for m in data.metrics]
    by_key = {(c.cell_key, c.variant, c.metric.name): c for c in result.comparisons}
    marks = Footnotes()
    adjusted = explained_cells(result) if marked else {}
    rows = []
    for cell_key, labels in data.cells:
        for variant in result.candidates:
            row = [Cell(t) for t in _param_values(result, labels, cell_key)]
            if many:
                row.append(Cell(variant))
            for m in data.metrics:
                c = by_key.get((cell_key, variant, m.name))
                text = tldr_text(c.comparison, c.verdict, c.metric.unit) if c else "n/a"
                if text == "n/a":
                    text += marks.mark(_na_reason(result, c, cell_key, variant, m.name))
                elif (cell_key, variant, m.name) in adjusted:
                    text += EXPLAINED_MARK
                row.append(Cell(text, c.verdict if c else None))
            rows.append(tuple(row))
    nparams = len(columns) - len(data.metrics)
    sweeps = {(s.variant, s.metric.name): s for s in result.sweeps}
    footer = []
    for variant in result.candidates:
        found = [sweeps.get((variant, m.name)) for m in data.metrics]
        first = next((s for s in found if s is not None), None)
        if first is None:
            continue
        row = [Cell(first.label)] + [Cell("")] * (len(_param_headers(result)) - 1)
        if many:
            row.append(Cell(variant))
        for s in found:
            if s is None:
                row.append(Cell("n/a" + marks.mark(_na_sweep_reason(result, variant, m.name))))
                continue
            text = tldr_text(s.comparison, s.verdict, s.metric.unit)
            if ("", variant, s.metric.name) in adjusted:
                text += EXPLAINED_MARK
            if s.summary.cells != first.summary.cells:
                text += f" ({s.summary.cells} cells)"
            row.append(Cell(text, s.verdict))
        footer.append(tuple(row))
    conf = f"{result.confidence:.0%}"
    vs = (
        f"{result.candidates[0]} vs {data.baseline}"
        if not many
        else f"each variant vs {data.baseline}"
    )
    title = f"TLDR — {vs}: {conf} CI of the relative change ({method_words(result.method, [c.comparison for c in result.comparisons if c.comparison])}); NS = not significant"
    if any(
        c.comparison is not None and getattr(c.comparison, "interval", None) == "fieller"
        for c in result.comparisons
    ):
        title += (
            "; † Fieller's ratio interval (a large change next to the baseline's own uncertainty)"
        )
    if footer:
        title += (
            "; geometric mean = the average change across the cells, each cell weighted equally"
        )
    adjusted_line = explained_line(result, adjusted)
    return Table(
        title,
        tuple(columns),
        tuple(rows),
        (False,) * nparams + (True,) * len(data.metrics),
        css_class="tldr",
        note="\n".join(marks.lines() + ([adjusted_line] if adjusted_line else [])),
        footer=tuple(footer),
    )


_MARKS = "¹²³⁴⁵⁶⁷⁸⁹"
#: The mark of a TLDR cell whose runs perflab adjusted for something it found (an
#: `EXPLAINS` warning: outlying runs, ties, a slow first run…).
EXPLAINED_MARK = "°"


def explained_cells(result: ComparisonTable) -> dict[tuple[str, str, str], list[str]]:
    """The TLDR cells (cell, candidate, metric) that an explaining warning concerns, with
    its kinds' names: a warning about the baseline's runs concerns every candidate's cell
    of that cell and metric; one about a metric across the cells (the geometric mean's),
    its footer row, keyed by cell ""."""
    from perflab.report.warning_groups import KIND_NAMES
    from perflab.stats.warnings import EXPLAINS

    out: dict[tuple[str, str, str], list[str]] = {}
    base = result.dataset.baseline
    for n in result.notes:
        if n.warning.kind != EXPLAINS or not n.metric:
            continue
        cell = "" if n.cell_key in ("", "-") and len(result.dataset.cells) > 1 else n.cell_key
        variants = result.candidates if n.variant in ("", base) else [n.variant]
        name = KIND_NAMES.get(n.warning.code, n.warning.code.replace("_", " "))
        for v in variants:
            kinds = out.setdefault((cell, v, n.metric), [])
            if name not in kinds:
                kinds.append(name)
    return out


def explained_line(
    result: ComparisonTable, cells: dict[tuple[str, str, str], list[str]]
) -> str | None:
    """The line under the TLDR for its `EXPLAINED_MARK` on ``cells`` (`explained_cells`):
    what perflab adjusted for, and where every such warning is (None: no cell marked)."""
    if not cells:
        return None
    kinds = list(dict.fromkeys(k for ks in cells.values() for k in ks))
    e = result.dataset.experiment
    return (
        f"{EXPLAINED_MARK} caveats perflab dealt with here: {', '.join(kinds)} "
        f"(each in full: perflab compare {e.id} --verbose)"
    )


class Footnotes:
    """Footnote marks for the reasons of `n/a` cells: one mark per distinct reason."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}

    def mark(self, reason: str) -> str:
        if reason not in self.reasons:
            i = len(self.reasons)
            self.reasons[reason] = _MARKS[i] if i < len(_MARKS) else f"({i + 1})"
        return self.reasons[reason]

    def lines(self) -> list[str]:
        """``¹ n/a: only 1 run of new here: need ≥ 2 runs per variant …``, one per reason."""
        return [f"{m} n/a: {reason}" for reason, m in self.reasons.items()]


def na_footnotes(table: Table) -> list[str]:
    """The TLDR table's footnotes (its `Table.note`, one line per reason for its `n/a` cells)."""
    return table.note.splitlines()


def _runs_of(result: ComparisonTable, cell_key: str, variant: str, metric: str) -> int:
    s = next(
        (
            s
            for s in result.summaries
            if (s.cell_key, s.variant, s.metric.name) == (cell_key, variant, metric)
        ),
        None,
    )
    return s.summary.n if s is not None and s.summary is not None else 0


def _na_reason(
    result: ComparisonTable, c: ComparedCell | None, cell_key: str, variant: str, metric: str
) -> str:
    """Why a TLDR cell has no interval, in words: the runs each side has, and the
    comparison's own warning (e.g. too few runs)."""
    base = result.dataset.baseline
    nb, nv = (_runs_of(result, cell_key, v, metric) for v in (base, variant))
    runs = f"{nb} run{'s' * (nb != 1)} of {base}, {nv} of {variant}"
    if c is None or c.comparison is None:
        data = result.dataset
        absent = [
            v
            for v, n in ((base, nb), (variant, nv))
            if n == 0
            and any(
                vals for (ck, vv, _m), vals in data.samples.items() if (ck, vv) == (cell_key, v)
            )
        ]
        if absent:  # its runs succeeded, without this metric (B/op without -benchmem)
            return f"{metric} is not in the runs of {' and '.join(absent)} ({runs})"
        return f"no successful run on a side ({runs})"
    said = "; ".join(dict.fromkeys(w.message for w in c.comparison.warnings))
    return f"{said} ({runs})" if said else f"the interval is undefined ({runs})"


def _na_sweep_reason(result: ComparisonTable, variant: str, metric: str) -> str:
    """Why a geometric-mean cell is empty: the analysis's note on it, if any."""
    for n in result.notes:
        if n.warning.code == "sweep_not_computed" and (n.variant, n.metric) == (variant, metric):
            return f"no geometric mean: {n.warning.message}"
    return "no geometric mean across the cells for this metric (fewer than 2 cells compared)"


SUMMARY_COLUMNS = ("n", "mean", "median", "stddev", "min", "max", "± MoE")


def summary_tables(result: ComparisonTable, colors: dict[str, str] | None = None) -> list[Table]:
    """One table per metric: per cell and variant, n/mean/median/stddev/min/max/margin of
    error; ``colors``: each variant's name in its plot colour (`variant_cell`). Made a
    column at a time (`Table.of_columns`): a large comparison's are thousands of rows."""
    data = result.dataset
    out = []
    leads: dict[str, list[str]] = {}
    names: dict[str, Cell | str] = {}
    for m in data.metrics:
        columns = _param_headers(result) + ["variant", *SUMMARY_COLUMNS]
        heads: list[tuple[Cell | str, ...]] = []
        summaries = []
        for s in result.summaries:
            if s.metric.name != m.name:
                continue
            lead = leads.get(s.cell_key)
            if lead is None:
                lead = leads[s.cell_key] = _param_values(result, s.labels, s.cell_key)
            name = names.get(s.variant)
            if name is None:
                base = s.variant == data.baseline and s.variant != "baseline"
                text = s.variant + (BASELINE_MARK if base else "")
                name = names[s.variant] = variant_cell(text, colors) if colors else text
            heads.append((*lead, name))
            summaries.append(s.summary)
        nlead = len(columns) - len(SUMMARY_COLUMNS)
        body = [list(column) for column in zip(*heads)] if heads else [[]] * nlead
        unit = f" ({m.unit})" if m.unit else ""
        title = (
            f"{m.name}{unit} — {'higher' if m.better == 'higher' else 'lower'} is better; "
            f"MoE = z·sd/√n at {result.confidence:.0%}"
        )
        out.append(
            Table.of_columns(
                title,
                tuple(columns),
                body + _summary_columns(summaries),
                (False,) * nlead + (True,) * len(SUMMARY_COLUMNS),
            )
        )
    return out


def _summary_columns(summaries: list[Summary | None]) -> list[list[str]]:
    """The n, mean, median, stddev, min, max and margin-of-error texts of each summary ("0"
    and "–" where there is none), the numbers formatted a column at a time."""
    there = [x for x in summaries if x is not None]
    columns = [
        [str(x.n) for x in there],
        fmt_numbers([x.mean for x in there]),
        fmt_numbers([x.median for x in there]),
        fmt_numbers([x.stddev for x in there]),
        fmt_numbers([x.min for x in there]),
        fmt_numbers([x.max for x in there]),
        fmt_numbers([x.margin_of_error for x in there]),
    ]
    if len(there) == len(summaries):
        return columns
    missing = [x is None for x in summaries]
    out = []
    for k, column in enumerate(columns):
        texts = iter(column)
        empty = "0" if k == 0 else "–"
        out.append([empty if gap else next(texts) for gap in missing])
    return out


def note_lines(result: ComparisonTable, max_places: int = 3) -> list[str]:
    """One line per distinct warning, naming where it applies (grouped, so that a
    design-wide issue such as too few runs is said once, not per cell)."""
    groups: dict[str, list[str]] = {}
    for n in result.notes:
        where = " · ".join(
            x for x in (n.cell_key if n.cell_key not in ("", "-") else "", n.variant, n.metric) if x
        )
        groups.setdefault(n.warning.message, []).append(where)
    lines = []
    for message, places in groups.items():
        places = [p for p in places if p]
        if not places:
            lines.append(message)
        elif len(places) <= max_places:
            lines.append(f"{'; '.join(places)}: {message}")
        else:
            lines.append(
                f"{'; '.join(places[:max_places])} and {len(places) - max_places} more: {message}"
            )
    return lines


def warning_blocks(lines: list[str]) -> list[Block]:
    """A bold "Warnings" line and the warnings as bullets (nothing when there are none)."""
    if not lines:
        return []
    return [Para.of(Span("Warnings", strong=True)), Bullets(tuple(Para.of(n) for n in lines))]


def compare_section(result: ComparisonTable) -> Section:
    """``perflab compare ID --format markdown``: the experiment's name and description, the
    TLDR table (the multiple-comparison statement under it), one summary table per metric,
    and the warnings."""
    e = result.dataset.experiment
    blocks: list[Block] = []
    if e.description:
        blocks.append(Para.of(e.description))
    alone = no_comparison_line(result)
    blocks.append(Para.of(alone) if alone else tldr_table(result))
    if result.correction_statement:
        blocks.append(Para.of(Span(result.correction_statement, em=True)))
    blocks += summary_tables(result)
    blocks += warning_blocks(note_lines(result))
    return Section("compare", f"{e.name} (experiment {e.id})", tuple(blocks))
