"""Markdown, the one renderer of document blocks (`perflab.report.blocks`) into Markdown:

- the report (`render_report_markdown`), for a mailing-list post or a pull request, with
  its plots as PNG (or SVG) files in a directory beside it, linked relatively; same
  sections and words as the HTML report;
- the comparison (`render_compare_markdown`, ``perflab compare ID --format markdown`` and
  ``.md`` exports) and the scaling fit (`render_scaling_markdown`): the blocks of
  `tables.compare_section` and `scaling_table.scaling_section`.

The report escapes text from specs, commands and outputs for Markdown (and inline HTML,
which GitHub and most renderers accept) outside code (`md_escape`); code blocks are fenced
with more backticks than their content holds, so nothing in them is ever interpreted.

The comparison post is drawn ``plain``, as it always was — the one special case of this
renderer: only ``|`` is escaped (so a table cell cannot break its row; a warning's
`` `perflab compare …` `` stays a code span), paragraphs are left as they are, a verdict
cell is its text and ✅/❌ without bold (bold marks the footer, the sweep's summary), and
an empty cell is empty.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from perflab.analysis.comparison_table import ComparisonTable
from perflab.analysis.scaling import ScalingResult
from perflab.report.blocks import (
    Block,
    Bullets,
    Code,
    Details,
    FlameGraph,
    Para,
    Plot,
    Section,
    Span,
    Table,
)
from perflab.report.scaling_table import scaling_section
from perflab.report.tables import compare_section
from perflab.stats import Verdict

if TYPE_CHECKING:  # the report model loads the plots (matplotlib): not for a comparison
    from perflab.report.document import Report

_MARK = {Verdict.BETTER: " ✅", Verdict.WORSE: " ❌"}

_SPECIAL = re.compile(r"([\\`*<>|]|^\[|\](?=[(\[:]))")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_BLOCK_START = re.compile(r"^(\s*)([#+\-=]|\d+)([.)]?)(?=\s|$)")


def md_escape(text: str) -> str:
    """Plain text that renders as itself: no emphasis, links, HTML or table breaks.

    Escapes only what could take effect, so that a raw-text reader (a mailing list) is
    not buried in backslashes: underscores inside words (``ops_per_sec``) and brackets
    that cannot form a link (``+[12.3, 16.1]%``) are left alone.
    """
    t = _SPECIAL.sub(r"\\\1", text.replace("\n", " "))
    t = _ENTITY.sub("&amp;", t)
    return _UNDERSCORE.sub(r"\\_", t)


def _pipes(text: str) -> str:
    """The plain escape: only what would end a table cell."""
    return text.replace("|", "\\|")


def _guard_start(text: str) -> str:
    """A paragraph or list item must not begin a heading, list or setext underline."""

    def guard(m: re.Match[str]) -> str:
        if m.group(2)[0].isdigit():  # "1. x" → "1\. x"; a digit alone starts nothing
            return m.group(0) if not m.group(3) else f"{m.group(1)}{m.group(2)}\\{m.group(3)}"
        return f"{m.group(1)}\\{m.group(2)}{m.group(3)}"

    return _BLOCK_START.sub(guard, text)


def _code_span(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fence(text: str, language: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


def _wrap(t: str, mark: str) -> str:
    """``mark`` (``**``, ``*``) around the text, outside its leading/trailing spaces."""
    stripped = t.strip()
    if not stripped:
        return t
    lead, trail = t[: len(t) - len(t.lstrip())], t[len(t.rstrip()) :]
    return f"{lead}{mark}{stripped}{mark}{trail}"


class _Writer:
    """Draws blocks; ``plain``: the comparison post's escaping and cells (module doc)."""

    def __init__(self, *, plain: bool = False, image_dir: str = "", fmt: str = "png"):
        self.plain, self.image_dir, self.fmt = plain, image_dir, fmt
        self.text = _pipes if plain else md_escape

    def span(self, s: Span) -> str:
        t = _code_span(s.text) if s.code else self.text(s.text)
        if s.strong or s.verdict in (Verdict.BETTER, Verdict.WORSE):
            t = _wrap(t, "**")
        if s.em:
            t = _wrap(t, "*")
        return t

    def para(self, p: Para) -> str:
        t = "".join(self.span(s) for s in p.spans)
        return t if self.plain else _guard_start(t.strip())

    def table(self, t: Table) -> str:
        empty = "" if self.plain else " "
        lines = []
        if t.title:
            lines += [f"**{self.text(t.title)}**", ""]
        lines.append("| " + " | ".join(self.text(c) or empty for c in t.columns) + " |")
        lines.append("|" + "|".join("---:" if n else ":---" for n in t.numeric) + "|")
        first_summary = len(t.rows)
        for i, row in enumerate(t.rows + t.footer):
            hl = bool(t.highlight) and i < len(t.highlight) and t.highlight[i]
            summary = i >= first_summary  # bold: a summary of the rows above (the sweep)
            cells = []
            for j, c in enumerate(row):
                text = self.text(c.text) or empty
                if c.verdict in _MARK:
                    bold = summary or not self.plain
                    text = (f"**{text}**" if bold else text) + _MARK[c.verdict]
                elif summary and c.text:
                    text = f"**{text}**"
                if hl:
                    text = f"**≠ {text}**" if j == 0 else f"**{text}**"
                cells.append(text)
            lines.append("| " + " | ".join(cells) + " |")
        if t.note:
            lines += ["", f"*{self.text(t.note)}*"]
        return "\n".join(lines)

    def plot(self, p: Plot) -> str:
        return (
            f"![{self.text(p.alt)}]({self.image_dir}/{p.key}.{self.fmt})\n\n"
            f"*{self.text(p.title)}.* {self.text(p.caption)}"
        )

    def block(self, b: Block, depth: int) -> str:
        if isinstance(b, Para):
            return self.para(b)
        if isinstance(b, Bullets):
            return "\n".join(f"- {self.para(p)}" for p in b.items)
        if isinstance(b, Table):
            return self.table(b)
        if isinstance(b, Plot):
            return self.plot(b)
        if isinstance(b, FlameGraph):  # the file beside the report (interactive in a browser)
            link = f"{self.image_dir}/{b.key}.svg"
            return f"[![{self.text(b.title)}]({link})]({link})\n\n*{self.text(b.title)}.* {self.text(b.caption)}"
        if isinstance(b, Code):
            head = f"{self.text(b.title)}\n\n" if b.title else ""
            return head + _fence(b.text, b.language)
        if isinstance(b, Details):
            return f"**{self.text(b.summary)}**\n\n" + "\n\n".join(
                self.block(x, depth) for x in b.blocks
            )
        if isinstance(b, Section):
            return self.section(b, depth + 1)
        raise TypeError(f"unknown block {type(b).__name__}")

    def section(self, s: Section, depth: int = 2) -> str:
        head = "#" * min(depth, 4) + " " + self.text(s.title)
        return "\n\n".join([head] + [self.block(b, depth) for b in s.blocks])


def render_compare_markdown(result: ComparisonTable) -> str:
    """``perflab compare ID --format markdown``: `tables.compare_section`, drawn plain."""
    return _Writer(plain=True).section(compare_section(result)) + "\n"


def render_scaling_markdown(result: ScalingResult) -> str:
    """``perflab compare ID --scaling PARAM --format markdown``: `scaling_table.scaling_section`,
    drawn plain."""
    return _Writer(plain=True).section(scaling_section(result)) + "\n"


def render_report_markdown(report: Report, image_dir: str, fmt: str = "png") -> str:
    """The Markdown text; plots are referenced as ``{image_dir}/{plot.key}.{fmt}``
    (the caller writes those files: `perflab.report.output.write_report`)."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"image format {fmt!r}: use png or svg")
    w = _Writer(image_dir=image_dir.rstrip("/").replace(" ", "%20"), fmt=fmt)
    parts = [f"# {md_escape(report.title)}"]
    if report.description:
        parts.append(md_escape(report.description))
    parts.append("\n".join(f"- {md_escape(m)}" for m in report.meta))
    for s in report.sections:
        parts.append(w.section(s))
    return "\n\n".join(parts) + "\n"
