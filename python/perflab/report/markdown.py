"""Markdown for a mailing-list post or a pull request."""

from __future__ import annotations

from perflab.analysis.compare import CompareResult
from perflab.analysis.scaling import ScalingResult
from perflab.report.scaling_table import method_line, scaling_tables
from perflab.report.tables import TableModel, note_lines, summary_tables, tldr_table
from perflab.stats import Verdict

_MARK = {Verdict.BETTER: " ✅", Verdict.WORSE: " ❌"}


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _table(model: TableModel) -> str:
    lines = [f"**{_escape(model.title)}**", ""]
    lines.append("| " + " | ".join(_escape(c) for c in model.columns) + " |")
    lines.append("|" + "|".join("---:" if n else ":---" for n in model.numeric) + "|")
    for row in model.rows:
        lines.append(
            "| " + " | ".join(_escape(c.text) + _MARK.get(c.verdict, "") for c in row) + " |"
        )
    for row in model.summary_rows:  # bold: a summary of the rows above, not one more cell
        lines.append(
            "| "
            + " | ".join(
                f"**{_escape(c.text)}**" + _MARK.get(c.verdict, "") if c.text else "" for c in row
            )
            + " |"
        )
    return "\n".join(lines)


def render_markdown(result: CompareResult) -> str:
    e = result.dataset.experiment
    parts = [f"## {e.name} (experiment {e.id})"]
    if e.description:
        parts.append(e.description)
    parts.append(_table(tldr_table(result)))
    if result.correction_statement:
        parts.append(f"*{_escape(result.correction_statement)}*")
    for model in summary_tables(result):
        parts.append(_table(model))
    notes = note_lines(result)
    if notes:
        parts.append("**Warnings**\n\n" + "\n".join(f"- {_escape(n)}" for n in notes))
    return "\n\n".join(parts) + "\n"


def render_scaling_markdown(result: ScalingResult) -> str:
    """`perflab compare ID --scaling PARAM --format markdown`."""
    e = result.dataset.experiment
    parts = [f"## {e.name} (experiment {e.id}): scaling with {_escape(result.param)}"]
    for table in scaling_tables(result):
        parts.append(_table(table.model))
        if table.notes:
            parts.append("\n".join(f"- {_escape(n)}" for n in table.notes))
    parts.append(f"*{_escape(method_line(result))}*")
    general = [n.warning.message for n in result.notes if not n.metric]
    if general:
        parts.append("**Warnings**\n\n" + "\n".join(f"- {_escape(n)}" for n in general))
    return "\n\n".join(parts) + "\n"
