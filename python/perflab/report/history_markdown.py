"""`perflab history NAME --format markdown`: the history as a post — a table per cell and
variant (a row per version: commit, runs, each metric's mean with its interval) and the
change points under it as a list. Every string is escaped (`markdown.md_escape`)."""

from __future__ import annotations

from perflab.analysis.version_series import History
from perflab.report.history_words import (
    change_sentence,
    experiments_text,
    groups,
    history_table,
    method_line,
    no_change_sentence,
)
from perflab.report.markdown import md_escape
from perflab.stats import Verdict

_MARK = {Verdict.BETTER: " ✅", Verdict.WORSE: " ❌"}


def render_history_markdown(history: History) -> str:
    lines = [f"# {md_escape(history.name)}: history", "", md_escape(experiments_text(history))]
    for w in history.warnings:
        lines += ["", f"> **Warning:** {md_escape(w.message)}"]
    for group in groups(history):
        table = history_table(history, group)
        lines += ["", f"## {md_escape(group.title(history.params))}", ""]
        lines.append("| " + " | ".join(md_escape(c) for c in table.columns) + " |")
        lines.append("|" + "|".join("---:" if n else ":---" for n in table.numeric) + "|")
        for row in table.rows:
            cells = [
                (f"**{md_escape(c.text)}**{_MARK[c.verdict]}" if c.verdict in _MARK else None)
                or md_escape(c.text)
                or " "
                for c in row
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for s in group.series:
            if not s.found:
                lines.append(
                    f"- {md_escape(s.metric.name)}: {md_escape(no_change_sentence(history))}"
                )
            for c in s.found:
                text = md_escape(f"{s.metric.name}: {change_sentence(c, s.metric.unit)}")
                lines.append(f"- **{text}**" if c.point.verdict in _MARK else f"- {text}")
            for w in s.changes.warnings:
                if w.code != "too_few_versions":
                    lines.append(f"- *{md_escape(w.message)}*")
    lines += ["", f"*{md_escape(method_line(history))}*", ""]
    return "\n".join(lines)
