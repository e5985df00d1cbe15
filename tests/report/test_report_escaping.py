"""Strings from specs, commands and their output are shown, never executed: a run whose
output contains ``<script>`` (and an ``onerror`` handler, markup in a description, a
unit and matrix labels, a failure reason from stderr) renders as that text in the HTML
report — checked in the page source and in headless Chromium — and in the Markdown report.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from cli_helpers import perflab, write_spec
from markdown_it import MarkdownIt
from perflab.report.browser import Browser, find_chromium

SPEC = r'''
name = "escape-check"
description = "<script>window.pwned = 'description'</script> & <b>bold</b> [x](javascript:alert(1))"
baseline = "a"
repetitions = 3
timeout = "20s"

[matrix]
mode = { "<i>x</i>" = 1, "$y$ & \"z\"" = 2 }

[[variant]]
name = "a"
description = "<img src=x onerror=\"window.pwned='variant'\">"
params = { base = 100 }

[[variant]]
name = "b"
description = "`code` *em* | pipe"
params = { base = 120 }

[[phase]]
name = "emit"
command = """
printf '%s\n' '<script>window.pwned="stdout"</script>' '<img src=x onerror=alert(1)>' "value=$(( {base} + {repetition} + {mode} ))"
if [ {repetition} = 2 ] && [ {variant} = b ]; then echo '<script>window.pwned="stderr"</script>' >&2; exit 3; fi
"""

[[metric]]
name = "value"
unit = "<u>us</u>"
better = "lower"
regex = 'value=(?P<value>[0-9]+)'
'''

HOSTILE = [
    '<script>window.pwned="stdout"</script>',
    "<img src=x onerror=alert(1)>",
    "<script>window.pwned = 'description'</script>",
    "<img src=x onerror=\"window.pwned='variant'\">",
    '<script>window.pwned="stderr"</script>',
    "<i>x</i>",
    "<u>us</u>",
]


class Tags(HTMLParser):
    """Every element and attribute the page really has (escaped text is not an element)."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _check_markup(html_text: str) -> Tags:
    t = Tags()
    t.feed(html_text)
    names = {tag for tag, _ in t.tags}
    assert "script" not in names
    assert not names & {"i", "u", "b", "iframe", "object", "embed"}, names
    for tag, attrs in t.tags:
        assert not any(a.startswith("on") for a in attrs), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/svg+xml;base64,"), attrs["src"][:60]
        if tag == "a":
            assert attrs.get("href", "").startswith("#"), attrs
    return t


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("escape")
    spec = write_spec(d, SPEC)
    db = d / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1, r.err  # one run fails on purpose (its stderr is hostile)
    return db, d


def test_html_shows_hostile_strings_as_text(hostile):
    db, d = hostile
    html = d / "r.html"
    r = perflab("report", "last", "--store", str(db), "-o", str(html))
    assert r.code == 0, r.err
    text = html.read_text()
    _check_markup(text)
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "&lt;script&gt;window.pwned=&quot;stdout&quot;&lt;/script&gt;" in text  # the run output
    assert (
        "&lt;script&gt;window.pwned=&quot;stderr&quot;&lt;/script&gt;" in text
    )  # the failure reason

    path = find_chromium()
    assert path, "chromium is not installed: run scripts/setup (Debian package chromium)"
    with Browser(path) as b:
        page = b.open(html)
        assert page.dialogs == [] and page.exceptions == []
        assert page.console_errors == []  # not even a CSP report: there was nothing to block
        assert page.failed_requests == []  # <img src=x> never became an element
        assert b.evaluate("typeof window.pwned") == "undefined"
        assert b.evaluate("document.scripts.length") == 0
        shown = b.evaluate("document.body.innerText")
    for s in HOSTILE:
        assert s in shown, s
    assert '$y$ & "z"' in shown


def test_markdown_shows_hostile_strings_as_text(hostile):
    db, d = hostile
    md = d / "r.md"
    r = perflab("report", "last", "--store", str(db), "-o", str(md))
    assert r.code == 0, r.err
    text = md.read_text()
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    t = Tags()
    t.feed(rendered)
    names = {tag for tag, _ in t.tags}
    assert "script" not in names and not names & {"i", "u", "b"}, names
    for tag, attrs in t.tags:
        assert not any(a.startswith("on") for a in attrs), (tag, attrs)
        if tag == "a":
            raise AssertionError(f"a link appeared: {attrs}")
        if tag == "img":
            assert attrs["src"].startswith("r_files/") and attrs["src"].endswith(".png"), attrs
    # The hostile text itself is still there to read (escaped, or inside a code block).
    assert '<script>window.pwned="stdout"</script>' in text  # in a fenced code block
    assert "\\<script\\>window.pwned = 'description'\\</script\\>" in text
    assert (
        "\\`code\\` \\*em\\* \\| pipe" in text
    )  # in the variants table (verbatim in the spec block)


def test_json_keeps_strings_verbatim(hostile):
    db, _d = hostile
    r = perflab("report", "last", "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["description"].startswith("<script>window.pwned = 'description'</script>")
    assert any(
        f["reason"].endswith('<script>window.pwned="stderr"</script>') for f in doc["failed_runs"]
    )
    assert any('<script>window.pwned="stdout"</script>' in o["text"] for o in doc["outputs"])
    assert doc["comparison"]["metrics"] == [
        {"name": "value", "unit": "<u>us</u>", "better": "lower"}
    ]
