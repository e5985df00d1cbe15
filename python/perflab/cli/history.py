"""perflab history NAME — a metric across the versions of a series: each version's mean with
its interval, and the change points between versions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option, open_store, pct
from perflab.errors import InputError
from perflab.report.formats import history_names

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "history",
        help="a metric across the versions of a series, and where it changed",
        description="Every experiment of NAME (or those of --experiments), ordered by version "
        "(perflab run --version, the spec's `version`, import --version): per metric, cell and "
        "variant, each version's mean with its confidence interval and its number of runs, "
        "and the change points found over every run of the versions, each with the interval "
        "of the change. Experiments without a version come last, by creation time.",
    )
    p.add_argument("name", nargs="?", default=None, help="the experiments' name")
    p.add_argument(
        "--experiments",
        metavar="IDS",
        default=None,
        help="these experiments instead of every one of a name: ids (or names) separated "
        "by commas, e.g. 3,5,9",
    )
    add_store_option(p)
    p.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="NAME",
        help="only this metric (repeatable; default: every metric)",
    )
    p.add_argument("--cell", metavar="KEY", default=None, help="only this cell, e.g. keys=1000")
    p.add_argument("--variant", metavar="NAME", default=None, help="only this variant")
    p.add_argument("--format", choices=history_names(), default=None, help="default: terminal")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE (history.md, history.json or history.html; the format from its "
        "ending unless --format); '-' for stdout; an HTML history defaults to history-NAME.html",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=None,
        metavar="LEVEL",
        help="level of every interval, e.g. 0.9 (default: 0.95 for each version's, 0.99 for "
        "the change points')",
    )
    p.add_argument(
        "--min-effect",
        type=pct,
        default=0.5,
        metavar="PCT",
        help="report a change point only when its whole interval lies beyond ±PCT "
        "(default 0.5%%; keep it above the drift per version × 10)",
    )
    p.add_argument(
        "--screenshot",
        metavar="PNG",
        help="also load the HTML history in headless Chromium, check it loads cleanly and "
        "save a screenshot of its top",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.history import HistoryRequest, history, parse_experiments
    from perflab.report.formats import View, history_format, history_format_of

    if args.name is not None and args.experiments is not None:
        raise InputError("give NAME or --experiments, not both")
    request = HistoryRequest(
        name=args.name,
        experiments=parse_experiments(args.experiments) if args.experiments is not None else (),
        metrics=tuple(args.metric or ()),
        cell=args.cell,
        variant=args.variant,
        confidence=args.confidence,
        min_effect=args.min_effect / 100,
    )
    kind = args.format
    if kind is None:
        kind = "terminal" if args.output in (None, "-") else history_format_of(Path(args.output))
    out = args.output
    if out is None and kind == "html":
        out = "history-" + re.sub(r"[^A-Za-z0-9_.+%-]", "_", args.name or "experiments") + ".html"
    if kind == "terminal" and out not in (None, "-"):
        raise InputError(
            "the terminal view prints: write a file with --format markdown, json or html"
        )
    if args.screenshot and (kind != "html" or out == "-"):
        raise InputError("--screenshot loads the HTML history: write it with -o history.html")
    fmt = history_format(kind)
    with open_store(args) as store:
        found = history(store, request)
    text = fmt.history(found, View(io.console))
    if out in (None, "-"):
        _write(io, text)
        return 0
    return _written(io, text, out, args.screenshot)


def _write(io: CliIO, text: str | bytes | None) -> None:
    if text is None:
        return
    io.out.write(text if isinstance(text, str) else text.decode())


def _written(io: CliIO, text: str | bytes | None, out: str, screenshot: str | None) -> int:
    """The history written to ``out`` (and checked in Chromium with ``screenshot``)."""
    from perflab.report.writable import write_atomically

    assert text is not None  # the terminal view is refused a file above
    path = Path(out)
    write_atomically(path, text.encode() if isinstance(text, str) else text)
    io.print(f"wrote {path}")
    if not screenshot:
        return 0
    from perflab.report.browser import screenshot_file

    page = screenshot_file(path, screenshot, max_height=2400)
    io.print(f"wrote {screenshot} (headless Chromium)")
    for problem in page.console_errors + page.exceptions + page.failed_requests + page.dialogs:
        io.warn(f"in the browser: {problem}")
    return 0 if page.clean else 1
