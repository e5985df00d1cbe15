"""`perflab history NAME --format html`: the history as one self-contained page — a trend
plot per metric and cell (each variant's mean per version with its interval, change points
as labelled vertical lines), then per cell and variant the table of versions and the
change points as sentences. Styles inline, plots as SVG data URIs, no script: the report's
page (`html.py`: its style and Content-Security-Policy), every string escaped."""

from __future__ import annotations

import base64
import datetime as dt
import re

from perflab._version import __version__
from perflab.analysis.version_series import History, Series
from perflab.report.blocks import Table
from perflab.report.history_words import (
    change_sentence,
    experiments_text,
    groups,
    history_table,
    method_line,
    no_change_sentence,
)
from perflab.report.html import CSP, STYLE, esc
from perflab.report.palette import variant_colors
from perflab.stats import Verdict

_CLASS = {Verdict.BETTER: "better", Verdict.WORSE: "worse"}
_EXTRA = """
.warn { background: var(--hl); border: 1px solid #d4a72c66; border-radius: 6px; padding: 6px 10px; }
ul.changes li { margin: 2px 0; }
"""


def render_history_html(history: History) -> str:
    """The whole page as text."""
    colors = variant_colors(list(dict.fromkeys(s.variant for s in history.series)))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
        f'<meta name="generator" content="perflab {esc(__version__)}">',
        f"<title>{esc(history.name)} — perflab history</title>",
        f"<style>{STYLE}{_EXTRA}</style></head><body><main>",
        f"<header><h1>{esc(history.name)}: history</h1>",
        (
            f'<ul class="meta"><li>{esc(experiments_text(history))}</li>'
            f"<li>{esc(method_line(history))}</li></ul></header>"
        ),
    ]
    parts += [f'<p class="warn">{esc(w.message)}</p>' for w in history.warnings]
    parts.append('<section id="trends"><h2>Trends</h2>')
    for key, series in _by_metric_and_cell(history):
        parts.append(_figure(history, series, colors, key))
    parts.append("</section>")
    for n, group in enumerate(groups(history)):
        parts.append(f'<section id="versions-{n + 1}"><h2>{esc(group.title(history.params))}</h2>')
        parts.append(_table(history_table(history, group)))
        items = []
        for s in group.series:
            if not s.found:
                items.append(f"<li>{esc(s.metric.name)}: {esc(no_change_sentence(history))}</li>")
            for c in s.found:
                cls = _CLASS.get(c.point.verdict, "")
                text = f"{s.metric.name}: {change_sentence(c, s.metric.unit)}"
                items.append(
                    f'<li class="{cls}">{esc(text)}</li>' if cls else f"<li>{esc(text)}</li>"
                )
        parts.append(f'<ul class="changes">{"".join(items)}</ul></section>')
    when = dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    parts.append(f"<footer>perflab {esc(__version__)} · {esc(when)}</footer>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _by_metric_and_cell(history: History) -> list[tuple[str, list[Series]]]:
    out: dict[tuple[str, str], list[Series]] = {}
    for s in history.series:
        out.setdefault((s.metric.name, s.cell_key), []).append(s)
    return [(f"{m}-{c}", v) for (m, c), v in out.items()]


def _figure(history: History, series: list[Series], colors: dict[str, str], key: str) -> str:
    from perflab.report.plots import render
    from perflab.report.plots.version_trend import trend

    s = series[0]
    where = "" if s.cell_key == "-" else f" at {s.cell_key}"
    title = f"{s.metric.name}{where} over {len(history.versions)} versions"
    svg = render(lambda: trend(history, series, colors, title), "svg")
    size = re.search(rb'<svg[^>]*\swidth="([0-9.]+)pt"[^>]*\sheight="([0-9.]+)pt"', svg[:2000])
    dims = (
        f' width="{round(float(size.group(1)) * 4 / 3)}" height="{round(float(size.group(2)) * 4 / 3)}"'
        if size
        else ""
    )
    data = base64.b64encode(svg).decode("ascii")
    alt = (
        f"{s.metric.name}{where}: the mean per version with its {history.confidence:.0%} "
        f"interval for {', '.join(x.variant for x in series)}; dashed lines mark the change points"
    )
    slug = re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-") or "plot"
    return (
        f'<figure id="fig-{esc(slug)}" class="plot"><img src="data:image/svg+xml;base64,{data}" '
        f'alt="{esc(alt)}"{dims}><figcaption><strong>{esc(title)}.</strong> Each point is a '
        f"version's mean with its {history.confidence:.0%} interval; a dashed line is a change "
        "point, labelled with the change and its interval.</figcaption></figure>"
    )


def _table(t: Table) -> str:
    out = ['<div class="table-wrap">', f'<div class="table-title">{esc(t.title)}</div>']
    out.append(f'<table class="history" aria-label="{esc(t.title)}"><thead><tr>')
    out += [
        f'<th{" class=num" if n else ""} scope="col">{esc(c)}</th>'
        for c, n in zip(t.columns, t.numeric)
    ]
    out.append("</tr></thead><tbody>")
    for row in t.rows:
        out.append("<tr>")
        for c, numeric in zip(row, t.numeric):
            classes = ["num"] if numeric else []
            word = ""
            if c.verdict in _CLASS:
                classes.append(_CLASS[c.verdict])
                word = f'<span class="word">{_CLASS[c.verdict]}</span>'
            attrs = f' class="{" ".join(classes)}"' if classes else ""
            out.append(f"<td{attrs}>{esc(c.text)}{word}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)
