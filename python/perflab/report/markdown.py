"""Markdown for a mailing-list post or a pull request."""

from __future__ import annotations

from perflab.analysis.compare import CompareResult
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
        lines.append("| " + " | ".join(_escape(c.text) + _MARK.get(c.verdict, "") for c in row) + " |")
    for row in model.summary_rows:  # bold: a summary of the rows above, not one more cell
        lines.append("| " + " | ".join(f"**{_escape(c.text)}**" + _MARK.get(c.verdict, "") if c.text else ""
                                       for c in row) + " |")
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
