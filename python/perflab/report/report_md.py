"""The report as Markdown for a mailing-list post or a pull request, with its plots as
PNG (or SVG) files in a directory beside it, linked relatively.

Same sections and words as the HTML report. Text from specs, commands and outputs is
escaped for Markdown (and inline HTML, which GitHub and most renderers accept) outside
code; code blocks are fenced with more backticks than their content holds, so nothing
in them is ever interpreted.
"""

from __future__ import annotations

import re

from perflab.report.blocks import Block, Bullets, Code, Details, Para, Plot, Section, Span, Table
from perflab.report.document import Report
from perflab.stats import Verdict

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


def _guard_start(text: str) -> str:
    """A paragraph or list item must not begin a heading, list or setext underline."""

    def guard(m: re.Match) -> str:
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


def _span(s: Span) -> str:
    t = _code_span(s.text) if s.code else md_escape(s.text)
    if s.strong or s.verdict in (Verdict.BETTER, Verdict.WORSE):
        stripped = t.strip()
        if stripped:
            lead, trail = t[: len(t) - len(t.lstrip())], t[len(t.rstrip()) :]
            t = f"{lead}**{stripped}**{trail}"
    return t


def _para(p: Para) -> str:
    return _guard_start("".join(_span(s) for s in p.spans).strip())


def _table(t: Table) -> str:
    lines = []
    if t.title:
        lines += [f"**{md_escape(t.title)}**", ""]
    lines.append("| " + " | ".join(md_escape(c) or " " for c in t.columns) + " |")
    lines.append("|" + "|".join("---:" if n else ":---" for n in t.numeric) + "|")
    first_summary = len(t.rows)
    for i, row in enumerate(t.rows + t.footer):
        hl = bool(t.highlight) and i < len(t.highlight) and t.highlight[i]
        cells = []
        for j, c in enumerate(row):
            text = md_escape(c.text) or " "
            if c.verdict in _MARK:
                text = f"**{text}**{_MARK[c.verdict]}"
            elif i >= first_summary and c.text:
                text = f"**{text}**"  # a summary row (the sweep's geometric mean)
            if hl:
                text = f"**≠ {text}**" if j == 0 else f"**{text}**"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    if t.note:
        lines += ["", f"*{md_escape(t.note)}*"]
    return "\n".join(lines)


def _plot(p: Plot, image_dir: str, fmt: str) -> str:
    return f"![{md_escape(p.alt)}]({image_dir}/{p.key}.{fmt})\n\n*{md_escape(p.title)}.* {md_escape(p.caption)}"


def _block(b: Block, image_dir: str, fmt: str, depth: int) -> str:
    if isinstance(b, Para):
        return _para(b)
    if isinstance(b, Bullets):
        return "\n".join(f"- {_para(p)}" for p in b.items)
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Plot):
        return _plot(b, image_dir, fmt)
    if isinstance(b, Code):
        head = f"{md_escape(b.title)}\n\n" if b.title else ""
        return head + _fence(b.text, b.language)
    if isinstance(b, Details):
        return f"**{md_escape(b.summary)}**\n\n" + "\n\n".join(
            _block(x, image_dir, fmt, depth) for x in b.blocks
        )
    if isinstance(b, Section):
        return _section(b, image_dir, fmt, depth + 1)
    raise TypeError(f"unknown block {type(b).__name__}")


def _section(s: Section, image_dir: str, fmt: str, depth: int = 2) -> str:
    head = "#" * min(depth, 4) + " " + md_escape(s.title)
    return "\n\n".join([head] + [_block(b, image_dir, fmt, depth) for b in s.blocks])


def render_report_md(report: Report, image_dir: str, fmt: str = "png") -> str:
    """The Markdown text; plots are referenced as ``{image_dir}/{plot.key}.{fmt}``
    (the caller writes those files: `perflab.report.output.write_report`)."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"image format {fmt!r}: use png or svg")
    image_dir = image_dir.rstrip("/").replace(" ", "%20")
    parts = [f"# {md_escape(report.title)}"]
    if report.description:
        parts.append(md_escape(report.description))
    parts.append("\n".join(f"- {md_escape(m)}" for m in report.meta))
    for s in report.sections:
        parts.append(_section(s, image_dir, fmt))
    return "\n\n".join(parts) + "\n"
