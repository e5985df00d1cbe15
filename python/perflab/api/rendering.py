"""An answer (`perflab.analysis.answer.Answer`) as text for Python callers: the command's
formats (`render`), and the HTML a notebook draws it with (`answer_html`, registered with
IPython's display formatter by `show_in_notebooks`, as IPython documents for types that
cannot render themselves: `Answer` sits below the renderers)."""

from __future__ import annotations

import html
import sys
from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.analysis.answer import Answer

#: Scoped styles of the notebook's HTML: the report's verdict colours, nothing of the notebook's.
_STYLE = (
    "<style>"
    ".perflab-compare .better{color:#1a7f37;font-weight:600}"
    ".perflab-compare .worse{color:#cf222e;font-weight:600}"
    ".perflab-compare .noise{color:#9a6700}"
    ".perflab-compare .ns,.perflab-compare .na{color:#57606a}"
    ".perflab-compare td .word{font-size:11px;margin-left:6px;text-transform:uppercase}"
    ".perflab-compare .table-title{font-weight:600;padding:4px 0 6px}"
    ".perflab-compare td.num,.perflab-compare th.num{text-align:right}"
    ".perflab-compare .meta{color:#57606a;font-size:90%}"
    "</style>"
)


def render(found: Answer, format: str = "markdown") -> str:
    """`perflab compare --format FORMAT` of ``found``: ``markdown``, ``csv`` or ``json``;
    ``html``: the TLDR table, the summaries and the warnings as the HTML report draws them."""
    if format == "html":
        return answer_html(found)
    from perflab.report.formats import View, comparison_format, render_answer

    if format == "terminal":
        raise InputError(
            "render: 'terminal' draws on a console; choose markdown, csv, json or html"
        )
    out = render_answer(comparison_format(format), found, View())
    assert out is not None, "only the terminal draws on a console"
    return out.decode() if isinstance(out, bytes) else out


def answer_html(found: Answer) -> str:
    """The comparison as the HTML report draws it (scaling fits alone: their one-line text)."""
    if found.table is None:
        return f"<pre>{html.escape(repr(found))}</pre>"
    from perflab.report.html import _section  # the report's renderer of a section
    from perflab.report.tables import compare_section

    def no_plot(_: object) -> bytes:  # a comparison's section holds no plot
        raise AssertionError("a comparison section has no plot")

    section = _section(compare_section(found.comparison), no_plot)
    return f'<div class="perflab-compare">{_STYLE}{section}</div>'


def show_in_notebooks() -> None:
    """Under IPython (a notebook, the IPython shell), has it draw an `Answer` with
    `answer_html`; elsewhere nothing."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    from perflab.analysis.answer import Answer

    shell.display_formatter.formatters["text/html"].for_type(Answer, answer_html)
