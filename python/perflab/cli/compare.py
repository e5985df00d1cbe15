"""perflab compare ID — the TLDR table of relative changes, and per-variant summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import (
    add_across_option,
    add_analysis_options,
    add_experiment_arguments,
    add_store_option,
    comparison_request,
    keep_until_exit,
    open_store,
    pct,
    without_cycle_collection,
)
from perflab.cli.exit_codes import EXIT_FAILED_CHECK, EXIT_OK
from perflab.report.formats import View, comparison_format, comparison_names, render_answer

if TYPE_CHECKING:
    import argparse

    from perflab.analysis.answer import Answer
    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO

# numpy/scipy and the reporters are imported when the command runs, not when the
# parser is built, so that `perflab --help` and other commands start fast.


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="compare each variant with the baseline (95%% CIs)",
        description="Print the TLDR table (rows: matrix cells; columns: metrics; cells: "
        "CI of the relative change vs the baseline, or NS), the geometric mean "
        "across the cells, and per-variant summaries. With --scaling PARAM: fit "
        "cost = a + b·PARAM^k per variant instead and compare per-unit costs.",
    )
    add_experiment_arguments(p, "compare")
    add_store_option(p)
    p.add_argument("--format", choices=comparison_names(), default="terminal")
    p.add_argument(
        "--json", action="store_const", const="json", dest="format", help="same as --format json"
    )
    add_analysis_options(p)
    p.add_argument(
        "--fail-if-worse",
        type=pct,
        default=None,
        metavar="PCT",
        help="exit 1 when a metric is significantly worse by more than PCT percent",
    )
    p.add_argument("--no-summary", action="store_true", help="only the TLDR table")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="every warning in full, one per line (default: one line per kind, with a count)",
    )
    add_across_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    with without_cycle_collection():
        return _run(args, io)


def _run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.analysis.answer import answer

    request = comparison_request(args, table=args.scaling is None, movers=args.format == "json")
    view = View(io.console, summaries=not args.no_summary, verbose=args.verbose, more=_more(args))
    fmt = comparison_format(args.format)
    with open_store(args) as store:
        # the renderer loads while the store's values are read in a thread
        found = answer(store, request, while_reading=fmt.load)
    _write(io, render_answer(fmt, found, view))
    if found.table is None:
        return _scaling_regressions(args, io, found)
    keep_until_exit(found)
    return _regressions(args, io, found)


def _regressions(args: argparse.Namespace, io: CliIO, found: Answer) -> int:
    """--fail-if-worse: each regression beyond it warned about; exit 1 when any."""
    if args.fail_if_worse is None:
        return 0
    from perflab.analysis.answer import regressions
    from perflab.report.numbers import fmt_pct

    bad = regressions(found, args.fail_if_worse)
    for c in bad:
        assert c.comparison is not None  # regressions() returns compared cells only
        io.warn(
            f"regression: {c.metric.name} at {c.cell_key} for {c.variant}: "
            f"{fmt_pct(c.comparison.estimate)} (worse than the {args.fail_if_worse:g}% allowed)"
        )
    return EXIT_FAILED_CHECK if bad else EXIT_OK


def _scaling_regressions(args: argparse.Namespace, io: CliIO, found: Answer) -> int:
    if args.fail_if_worse is None:
        return 0
    from perflab.analysis.answer import regressions

    bad = regressions(found, args.fail_if_worse)
    for g, f in bad:
        assert f.versus is not None  # scaling_regressions() returns candidates only
        where = f" at {g.where}" if g.where else ""
        io.warn(
            f"regression: per-unit {g.metric.name}{where} for {f.variant}: "
            f"{f.versus.estimate * 100:+.1f}% (worse than the {args.fail_if_worse:g}% allowed)"
        )
    return EXIT_FAILED_CHECK if bad else EXIT_OK


def _more(args: argparse.Namespace) -> str:
    """How to see every warning in full, for the line under the grouped ones."""
    also = f", or perflab show {args.experiment} --warnings" if args.other is None else ""
    return f"add --verbose{also}"


def _write(io: CliIO, out: str | bytes | None) -> None:
    """Text to stdout as it is (a byte document straight to the byte stream under it);
    None: the format drew on the console itself."""
    if out is None:
        return
    if isinstance(out, str):
        io.out.write(out)
    elif hasattr(io.out, "buffer"):  # a byte stream under the text one (stdout): as it is
        io.out.flush()
        io.out.buffer.write(out)
    else:
        io.out.write(out.decode())
