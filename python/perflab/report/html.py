"""The report as one self-contained HTML file: styles inline, plots as SVG data URIs,
no script of its own, no font or image from anywhere else, so it opens offline in any
browser. Flame graphs (`blocks.FlameGraph`) are inferno's interactive SVGs, each in a
sandboxed frame of its own (``srcdoc``, opaque origin: it cannot reach the page); the page's
policy then allows exactly their scripts, by hash (`flame_graph_policy`), and nothing else.

Every string that came from a spec, a command or its output is escaped here
(`html.escape`, quotes included) and the page forbids scripts outright with a
Content-Security-Policy (``default-src 'none'``): a run whose output contains
``<script>`` shows that text and runs nothing.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable

from perflab._version import __version__
from perflab.report import plots
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
from perflab.report.document import Report
from perflab.stats import Verdict

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_VERDICT_CLASS = {
    Verdict.BETTER: "better",
    Verdict.WORSE: "worse",
    Verdict.NOT_SIGNIFICANT: "ns",
    Verdict.WITHIN_NOISE: "noise",
    Verdict.UNDEFINED: "na",
}
_WORD = {Verdict.BETTER: "better", Verdict.WORSE: "worse"}

STYLE = """
:root { --fg:#1f2328; --muted:#57606a; --line:#d0d7de; --soft:#f6f8fa; --better:#1a7f37; --worse:#cf222e;
        --better-bg:#dafbe1; --worse-bg:#ffebe9; --noise:#9a6700; --hl:#fff8c5; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: #fff; line-height: 1.5;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
p { margin: 8px 0; }
code, pre { font-family: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace;
            font-size: 13px; }
.desc { font-size: 16px; color: var(--fg); margin: 4px 0 10px; }
.meta { color: var(--muted); font-size: 13px; margin: 0; padding-left: 18px; }
nav.toc { margin: 16px 0 0; padding: 8px 12px; background: var(--soft); border: 1px solid var(--line);
          border-radius: 6px; font-size: 13px; }
nav.toc a { color: #0969da; text-decoration: none; margin-right: 14px; white-space: nowrap; }
#verdict p { font-size: 16px; }
.better { color: var(--better); font-weight: 600; }
.worse { color: var(--worse); font-weight: 600; }
.noise { color: var(--noise); }
.ns, .na { color: var(--muted); }
.table-wrap { overflow-x: auto; margin: 10px 0 18px; }
table { border-collapse: collapse; font-size: 13.5px; }
.table-title { font-weight: 600; padding: 4px 0 6px; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 10px; vertical-align: top; }
th { background: var(--soft); text-align: left; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fbfcfd; }
table.tldr td { font-size: 15px; padding: 6px 12px; }
table.tldr td.better { background: var(--better-bg); }
table.tldr td.worse { background: var(--worse-bg); }
td .word { font-size: 11px; font-weight: 600; margin-left: 6px; text-transform: uppercase; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px;
      vertical-align: baseline; }
table.env td:first-child { font-weight: 600; white-space: nowrap; }
table.env td { max-width: 480px; overflow-wrap: anywhere; }
tr.diff td { background: var(--hl) !important; }
tfoot td { font-weight: 600; border-top: 2px solid var(--fg); }
tr.diff td:first-child::after { content: " ≠"; color: var(--worse); }
table.failed td:last-child { overflow-wrap: anywhere; max-width: 520px; }
figure { margin: 14px 0 26px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eaeef2; border-radius: 4px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; max-width: 900px; }
figcaption strong { color: var(--fg); }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
      overflow-x: auto; white-space: pre; line-height: 1.4; }
.code-title { font-size: 13px; color: var(--muted); margin: 14px 0 4px; }
details { margin: 6px 0; }
summary { cursor: pointer; font-size: 13.5px; }
ul { padding-left: 22px; }
li { margin: 3px 0; }
footer { color: var(--muted); font-size: 12px; margin-top: 40px; }
@media print { nav.toc { display: none; } figure, table { break-inside: avoid; } }
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _span(s: Span) -> str:
    t = esc(s.text)
    if s.code:
        t = f"<code>{t}</code>"
    if s.strong:
        t = f"<strong>{t}</strong>"
    if s.em:
        t = f"<em>{t}</em>"
    if s.verdict is not None and s.verdict in _VERDICT_CLASS:
        t = f'<span class="{_VERDICT_CLASS[s.verdict]}">{t}</span>'
    return t


def _para(p: Para, tag: str = "p") -> str:
    return f"<{tag}>{''.join(_span(s) for s in p.spans)}</{tag}>"


_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


def _table(t: Table) -> str:
    cls = f' class="{esc(t.css_class)}"' if t.css_class else ""
    label = f' aria-label="{esc(t.title)}"' if t.title else ""
    out = ['<div class="table-wrap">']
    if t.title:  # above the table, not a <caption>: a caption wraps to the table's width
        out.append(f'<div class="table-title">{esc(t.title)}</div>')
    out.append(f"<table{cls}{label}>")
    num = ' class="num"'
    out.append(
        "<thead><tr>"
        + "".join(
            f'<th{num if n else ""} scope="col">{esc(c)}</th>' for c, n in zip(t.columns, t.numeric)
        )
        + "</tr></thead><tbody>"
    )
    for i, row in enumerate(t.rows + t.footer):
        hl = bool(t.highlight) and i < len(t.highlight) and t.highlight[i]
        if i == len(t.rows):
            out.append("</tbody><tfoot>")
        out.append('<tr class="diff">' if hl else "<tr>")
        for c, numeric in zip(row, t.numeric):
            classes = []
            if numeric:
                classes.append("num")
            if c.verdict is not None and c.verdict in _VERDICT_CLASS:
                classes.append(_VERDICT_CLASS[c.verdict])
            attrs = f' class="{" ".join(classes)}"' if classes else ""
            if c.title:
                attrs += f' title="{esc(c.title)}"'
            body = esc(c.text)
            if c.color and _COLOR.fullmatch(c.color):
                body = f'<span class="sw" style="background:{c.color}"></span>{body}'
            if c.verdict in _WORD:
                body += f'<span class="word">{_WORD[c.verdict]}</span>'
            out.append(f"<td{attrs}>{body}</td>")
        out.append("</tr>")
    out.append(("</tfoot>" if t.footer else "</tbody>") + "</table></div>")
    if t.note:
        out.append(f'<p class="meta">{esc(t.note)}</p>')
    return "".join(out)


def _svg_size(svg: bytes) -> tuple[int, int] | None:
    m = re.search(rb'<svg[^>]*\swidth="([0-9.]+)pt"[^>]*\sheight="([0-9.]+)pt"', svg[:2000])
    if not m:
        return None
    return round(float(m.group(1)) * 4 / 3), round(float(m.group(2)) * 4 / 3)


def _plot(p: Plot, render: Callable[[Plot], bytes]) -> str:
    svg = render(p)
    size = _svg_size(svg)
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    data = base64.b64encode(svg).decode("ascii")
    return (
        f'<figure id="fig-{esc(p.key)}" class="plot"><img src="data:image/svg+xml;base64,{data}" '
        f'alt="{esc(p.alt)}"{dims}><figcaption><strong>{esc(p.title)}.</strong> {esc(p.caption)}'
        "</figcaption></figure>"
    )


def flame_graph_policy(graphs: list[FlameGraph]) -> str:
    """The page's CSP with the flame graphs' scripts allowed by hash: inferno's script
    elements and its ``onload="init(evt)"`` handler (frames are sandboxed srcdoc documents,
    which inherit the page's policy)."""
    if not graphs:
        return CSP
    hashes: dict[str, None] = {}
    for g in graphs:
        for body in _SCRIPT.findall(g.svg):
            hashes[_sha256(body.replace("<![CDATA[", "").replace("]]>", ""))] = None
        for handler in _HANDLER.findall(g.svg):
            hashes[_sha256(handler)] = None
    sources = " ".join(f"'{h}'" for h in hashes)
    return CSP + f"; script-src 'unsafe-hashes' {sources}; frame-src 'self'"


_SCRIPT = re.compile(r"<script[^>]*>(.*?)</script>", re.S)
_HANDLER = re.compile(r'\son[a-z]+="([^"]*)"')


def _sha256(text: str) -> str:
    import hashlib

    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _flame_graph(g: FlameGraph) -> str:
    m = re.search(r'<svg[^>]*\sheight="([0-9]+)"', g.svg[:3000])
    height = int(m.group(1)) + 8 if m else 600
    return (
        f'<figure id="fig-{esc(g.key)}" class="flame">'
        f'<iframe sandbox="allow-scripts" title="{esc(g.title)}" style="width:100%;'
        f'height:{height}px;border:1px solid #eaeef2;border-radius:4px" '
        f'srcdoc="{esc(g.svg)}"></iframe>'
        f"<figcaption><strong>{esc(g.title)}.</strong> {esc(g.caption)}</figcaption></figure>"
    )


def _code(c: Code) -> str:
    title = f'<div class="code-title">{esc(c.title)}</div>' if c.title else ""
    lang = f' class="language-{esc(c.language)}"' if c.language else ""
    return f"{title}<pre><code{lang}>{esc(c.text)}</code></pre>"


def _block(b: Block, render: Callable[[Plot], bytes], depth: int) -> str:
    if isinstance(b, Para):
        return _para(b)
    if isinstance(b, Bullets):
        return "<ul>" + "".join(_para(p, "li") for p in b.items) + "</ul>"
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Plot):
        return _plot(b, render)
    if isinstance(b, Code):
        return _code(b)
    if isinstance(b, FlameGraph):
        return _flame_graph(b)
    if isinstance(b, Details):
        inner = "".join(_block(x, render, depth) for x in b.blocks)
        return f"<details><summary>{esc(b.summary)}</summary>{inner}</details>"
    if isinstance(b, Section):
        return _section(b, render, depth + 1)
    raise TypeError(f"unknown block {type(b).__name__}")


def _section(s: Section, render: Callable[[Plot], bytes], depth: int = 2) -> str:
    h = f"h{min(depth, 4)}"
    body = "".join(_block(b, render, depth) for b in s.blocks)
    return f'<section id="{esc(s.id)}"><{h}>{esc(s.title)}</{h}>{body}</section>'


def render_html(report: Report, *, images: dict[str, bytes] | None = None) -> str:
    """The whole page as text. ``images``: plot key → SVG bytes, already drawn (e.g. by
    `drawing.render_plots`); plots missing from it are drawn here."""
    images = images or {}

    def render(p: Plot) -> bytes:
        return images[p.key] if p.key in images else plots.render(p.make, "svg")

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="'
        # perflab's own text and base64 hashes: its 'quotes' kept as written
        + flame_graph_policy(report.flame_graphs()).replace('"', "&quot;")
        + '">',
        f'<meta name="generator" content="perflab {esc(__version__)}">',
        f"<title>{esc(report.title)} — perflab report</title>",
        f"<style>{STYLE}</style></head><body><main>",
        f"<header><h1>{esc(report.title)}</h1>",
    ]
    if report.description:
        parts.append(f'<p class="desc">{esc(report.description)}</p>')
    parts.append('<ul class="meta">' + "".join(f"<li>{esc(m)}</li>" for m in report.meta) + "</ul>")
    parts.append(
        '<nav class="toc">'
        + " ".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in report.sections)
        + "</nav></header>"
    )
    for s in report.sections:
        parts.append(_section(s, render))
    parts.append(f"<footer>perflab {esc(__version__)} · {esc(report.generated_at)}</footer>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)
