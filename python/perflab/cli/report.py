"""perflab report ID [B] — the comparison as a report with plots: HTML, Markdown or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import (
    add_across_option,
    add_analysis_options,
    add_experiment_arguments,
    add_store_option,
    comparison_request,
    open_store,
)
from perflab.errors import InputError
from perflab.report.formats import report_names

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO

# matplotlib, numpy and the report modules are imported when the command runs.


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "report",
        help="write a report with plots (HTML, Markdown + images, or JSON)",
        description="Write the comparison of an experiment (or of experiment B against experiment A) as a "
        "self-contained HTML page, a Markdown post with its plots beside it, or JSON: verdict, "
        "TLDR table, relative changes, run distributions, runs in execution order, latency "
        "percentile spectra, metrics against numeric parameters, warnings, environment, the spec "
        "and how to reproduce.",
    )
    add_experiment_arguments(p, "report")
    add_store_option(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="report.html, report.md (plots go to report_files/) or report.json; '-' for "
        "stdout (HTML or JSON); default: report-ID.html",
    )
    p.add_argument(
        "--format",
        choices=report_names(),
        default=None,
        help="instead of guessing from the file name",
    )
    p.add_argument(
        "--json",
        action="store_const",
        const="json",
        dest="format",
        help="the JSON export (schema perflab.report/1); to stdout unless -o",
    )
    p.add_argument(
        "--images",
        choices=["png", "svg"],
        default="png",
        help="image format of a Markdown report's plots (default: png)",
    )
    add_analysis_options(p)
    add_across_option(p)
    p.add_argument(
        "--screenshot",
        metavar="PNG",
        help="also load the HTML report in headless Chromium, check it loads cleanly and save "
        "a screenshot of its top",
    )
    p.add_argument(
        "--screenshot-section",
        metavar="ID",
        help="with --screenshot: that section of the report instead of its top (e.g. "
        "profiles, verdict)",
    )
    _add_verbose(p)
    p.set_defaults(handler=run)


def _add_verbose(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print every warning in full, one per line, after writing the report",
    )


def run(args: argparse.Namespace, io: CliIO) -> int:
    from pathlib import Path

    from perflab.api.reporting import build_report
    from perflab.report.formats import report_format
    from perflab.report.output import format_of, write_report

    request = comparison_request(args)
    with open_store(args) as store:
        report = build_report(store, request)

    out = args.output
    if out is None:
        if args.format == "json":
            out = "-"
        else:
            ids = "-".join(str(e.id) for e in report.experiments)
            out = f"report-{ids}.{'md' if args.format == 'markdown' else 'html'}"
    if out == "-":
        kind = args.format or "html"
        text = report_format(kind).text(report)
        if text is None:
            what = "a Markdown report" if kind == "markdown" else f"a {kind} report"
            raise InputError(
                f"{what} needs a file name (its plots are written beside it): -o report.md"
            )
        if args.screenshot:
            raise InputError("--screenshot needs the HTML report in a file: -o report.html")
        io.out.write(text)
        return 0

    path = Path(out)
    kind = format_of(path, args.format)
    if args.screenshot_section and not args.screenshot:
        raise InputError("--screenshot-section names the part of --screenshot PNG to take")
    if args.screenshot and kind != "html":
        raise InputError("--screenshot loads the HTML report: write it with -o report.html")
    files = write_report(report, path, fmt=kind, image_format=args.images)
    n = len(report.plots())
    extra = f" and {len(files) - 1} images in {files[0].parent}/" if len(files) > 1 else ""
    io.print(f"wrote {path}{extra} ({n} plots" + (", data only" if kind == "json" else "") + ")")
    if args.verbose:
        from perflab.report.warning_groups import print_warnings

        print_warnings(io.console, report.result.notes)
    if args.screenshot:
        from perflab.report.browser import screenshot_file

        page = screenshot_file(
            path, args.screenshot, max_height=2400, section=args.screenshot_section
        )
        io.print(f"wrote {args.screenshot} (headless Chromium)")
        for problem in page.console_errors + page.exceptions + page.failed_requests + page.dialogs:
            io.warn(f"in the browser: {problem}")
        if not page.clean:
            return 1
    return 0
