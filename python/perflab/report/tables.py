"""Table models (plain strings + verdicts) built from a CompareResult; each output
format only decides how to draw them."""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.analysis.compare import CompareResult
from perflab.report.format import fmt_number, method_words, metric_header, tldr_text
from perflab.stats import Verdict


@dataclass(frozen=True)
class TableCell:
    text: str
    verdict: Verdict | None = None  # colours/wording for better/worse


@dataclass(frozen=True)
class TableModel:
    title: str
    columns: list[str]
    rows: list[list[TableCell]]
    numeric: list[bool]  # right-align these columns
    summary_rows: list[list[TableCell]] = field(
        default_factory=list
    )  # under a rule: e.g. the sweep


def _param_headers(result: CompareResult) -> list[str]:
    return list(result.dataset.params) or ["cell"]


def _param_values(result: CompareResult, labels: dict, key: str) -> list[str]:
    params = result.dataset.params
    return [labels.get(p, "") for p in params] if params else ["all" if key == "-" else key]


def tldr_table(result: CompareResult) -> TableModel:
    """Rows = cells (× candidate variant when there are several), columns = metrics."""
    data = result.dataset
    many = len(result.candidates) > 1
    columns = _param_headers(result) + (["variant"] if many else [])
    columns += [metric_header(m.name, m.unit, m.better) for m in data.metrics]
    by_key = {(c.cell_key, c.variant, c.metric.name): c for c in result.comparisons}
    rows = []
    for cell_key, labels in data.cells:
        for variant in result.candidates:
            row = [TableCell(t) for t in _param_values(result, labels, cell_key)]
            if many:
                row.append(TableCell(variant))
            for m in data.metrics:
                c = by_key.get((cell_key, variant, m.name))
                row.append(
                    TableCell(tldr_text(c.comparison, c.verdict, c.metric.unit), c.verdict)
                    if c
                    else TableCell("n/a")
                )
            rows.append(row)
    nparams = len(columns) - len(data.metrics)
    sweeps = {(s.variant, s.metric.name): s for s in result.sweeps}
    summary_rows = []
    for variant in result.candidates:
        found = [sweeps.get((variant, m.name)) for m in data.metrics]
        first = next((s for s in found if s is not None), None)
        if first is None:
            continue
        row = [TableCell(first.label)] + [TableCell("")] * (len(_param_headers(result)) - 1)
        if many:
            row.append(TableCell(variant))
        for s in found:
            if s is None:
                row.append(TableCell("n/a"))
                continue
            text = tldr_text(s.comparison, s.verdict, s.metric.unit)
            if s.summary.cells != first.summary.cells:
                text += f" ({s.summary.cells} cells)"
            row.append(TableCell(text, s.verdict))
        summary_rows.append(row)
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
    if summary_rows:
        title += (
            "; geometric mean = the average change across the cells, each cell weighted equally"
        )
    return TableModel(
        title, columns, rows, [False] * nparams + [True] * len(data.metrics), summary_rows
    )


SUMMARY_COLUMNS = ["n", "mean", "median", "stddev", "min", "max", "± MoE"]


def summary_tables(result: CompareResult) -> list[TableModel]:
    """One table per metric: per cell and variant, n/mean/median/stddev/min/max/margin of error."""
    data = result.dataset
    out = []
    for m in data.metrics:
        columns = _param_headers(result) + ["variant"] + SUMMARY_COLUMNS
        rows = []
        for s in result.summaries:
            if s.metric.name != m.name:
                continue
            row = [TableCell(t) for t in _param_values(result, s.labels, s.cell_key)]
            base = s.variant == data.baseline and s.variant != "baseline"
            row.append(TableCell(s.variant + (" (baseline)" if base else "")))
            if s.summary is None:
                row += [TableCell("0")] + [TableCell("–")] * (len(SUMMARY_COLUMNS) - 1)
            else:
                x = s.summary
                row += [TableCell(str(x.n))] + [
                    TableCell(fmt_number(v))
                    for v in (x.mean, x.median, x.stddev, x.min, x.max, x.margin_of_error)
                ]
            rows.append(row)
        unit = f" ({m.unit})" if m.unit else ""
        title = (
            f"{m.name}{unit} — {'higher' if m.better == 'higher' else 'lower'} is better; "
            f"MoE = z·sd/√n at {result.confidence:.0%}"
        )
        nlead = len(columns) - len(SUMMARY_COLUMNS)
        out.append(
            TableModel(title, columns, rows, [False] * nlead + [True] * len(SUMMARY_COLUMNS))
        )
    return out


def note_lines(result: CompareResult, max_places: int = 3) -> list[str]:
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
