"""perflab compare ID — the TLDR table of relative changes, and per-variant summaries."""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from perflab.cli.common import (
    across_option,
    add_across_option,
    add_analysis_options,
    add_experiment_arguments,
    add_store_option,
    analysis_options,
    experiment_pairs,
    keep_until_exit,
    open_store,
    pct,
    without_cycle_collection,
)

if TYPE_CHECKING:
    import argparse

    from rich.console import Console

    from perflab.analysis.scaling import ScalingOptions
    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO

#: What `_emit` writes: a comparison or a scaling result.
Result = TypeVar("Result")

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
    p.add_argument("--format", choices=["terminal", "markdown", "csv", "json"], default="terminal")
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
    opts = analysis_options(args)
    scaling = opts.pop("scaling")
    pairs = experiment_pairs(args)
    across = across_option(args)
    if scaling is not None:
        return run_scaling(args, io, opts, scaling, pairs)
    to_json: Callable[[Any], str | bytes] = _compare_json
    with open_store(args) as store:
        if args.other is None:  # the values read while the statistics and the writer load
            store.prefetch(store.experiment(args.experiment).id)
        from perflab.analysis.compare import compare_dataset, regressions
        from perflab.analysis.dataset import load_dataset

        importlib.import_module(_WRITERS[args.format])

        if across is not None:
            from perflab.analysis.across import across_dataset, compare_across

            result = compare_across(
                across_dataset(load_dataset(store, args.experiment), *across), **opts
            )
        elif args.other is None:
            from perflab.observe.movers import profile_movers

            data = load_dataset(store, args.experiment)
            result = compare_dataset(data, **opts)
            movers = profile_movers(store, data.experiment.id, data.baseline, result.confidence)
            if movers:  # functions whose share of the profiles' samples changed
                to_json = functools.partial(_with_movers, movers=movers)
        else:
            from perflab.analysis.cross import compare_cross, cross_dataset

            cross = cross_dataset(store, args.experiment, args.other, pairs)
            result = compare_cross(cross, **opts)
    _emit(
        args,
        io,
        result,
        to_json,
        _compare_markdown,
        _compare_csv,
        lambda r, console: _compare_terminal(args, r, console),
    )
    keep_until_exit(result)
    if args.fail_if_worse is not None:
        from perflab.report.format import fmt_pct

        bad = regressions(result, args.fail_if_worse)
        for c in bad:
            assert c.comparison is not None  # regressions() returns compared cells only
            io.warn(
                f"regression: {c.metric.name} at {c.cell_key} for {c.variant}: "
                f"{fmt_pct(c.comparison.estimate)} (worse than the {args.fail_if_worse:g}% allowed)"
            )
        return 1 if bad else 0
    return 0


# The renderers, imported for the format asked for only (rich and the terminal layout are
# not needed for --format csv, nor the CSV writer for the terminal) — before the statistics
# run, while the store's read may still be under way in its thread (`_WRITERS`).

#: The module that writes each --format.
_WRITERS = {
    "terminal": "perflab.report.terminal",
    "markdown": "perflab.report.markdown",
    "csv": "perflab.report.csv_table",
    "json": "perflab.report.json_doc",
}


def _compare_json(result: Any) -> bytes:
    from perflab.report.json_doc import render_compare_json_bytes

    return render_compare_json_bytes(result)


def _compare_markdown(result: Any) -> str:
    from perflab.report.markdown import render_compare_markdown

    return render_compare_markdown(result)


def _compare_csv(result: Any) -> str:
    from perflab.report.csv_table import render_csv

    return render_csv(result)


def _compare_terminal(args: argparse.Namespace, result: Any, console: Console) -> None:
    from perflab.report.terminal import render_terminal

    render_terminal(
        result, console, summaries=not args.no_summary, verbose=args.verbose, more=_more(args)
    )


def _with_movers(result: Any, movers: list[Any]) -> str:
    """The ``perflab.compare/1`` document with ``profile_movers`` (`perflab.observe.movers`)."""
    import json

    from perflab.report.json_doc import render_compare_json

    doc = json.loads(render_compare_json(result))
    doc["profile_movers"] = [m.as_dict() for m in movers]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _more(args: argparse.Namespace) -> str:
    """How to see every warning in full, for the line under the grouped ones."""
    also = f", or perflab show {args.experiment} --warnings" if args.other is None else ""
    return f"add --verbose{also}"


def run_scaling(
    args: argparse.Namespace,
    io: CliIO,
    opts: dict[str, Any],
    scaling: ScalingOptions,
    pairs: list[tuple[str, str]] | None,
) -> int:
    """`perflab compare ID --scaling PARAM`: the scaling fits instead of the TLDR table."""
    from perflab.analysis.compare import Note
    from perflab.analysis.dataset import load_dataset
    from perflab.analysis.scaling import fit_dataset, scaling_regressions
    from perflab.errors import InputError
    from perflab.report.csv_table import render_scaling_csv
    from perflab.report.json_doc import render_scaling_json
    from perflab.report.markdown import render_scaling_markdown
    from perflab.report.terminal import render_scaling_terminal

    if opts["method"] not in ("auto", "welch") or opts["method_options"]:
        raise InputError(
            "--scaling fits the per-size means by weighted least squares: --method, --interval, "
            "--statistic, --resamples and --scale do not apply to it"
        )
    with open_store(args) as store:
        if args.other is None:
            data, extra = load_dataset(store, args.experiment), []
        else:
            from perflab.analysis.cross import cross_dataset

            cross = cross_dataset(store, args.experiment, args.other, pairs)
            data, extra = cross.dataset, [Note(w) for w in cross.notes]
    result = fit_dataset(data, scaling, confidence=opts["confidence"], threshold=opts["threshold"])
    if extra:
        result = dataclasses.replace(result, notes=extra + result.notes)
    _emit(
        args,
        io,
        result,
        render_scaling_json,
        render_scaling_markdown,
        render_scaling_csv,
        render_scaling_terminal,
    )
    if args.fail_if_worse is not None:
        bad = scaling_regressions(result, args.fail_if_worse)
        for g, f in bad:
            assert f.versus is not None  # scaling_regressions() returns candidates only
            where = f" at {g.where}" if g.where else ""
            io.warn(
                f"regression: per-unit {g.metric.name}{where} for {f.variant}: {f.versus.estimate * 100:+.1f}% "
                f"(worse than the {args.fail_if_worse:g}% allowed)"
            )
        return 1 if bad else 0
    return 0


def _emit(
    args: argparse.Namespace,
    io: CliIO,
    result: Result,
    to_json: Callable[[Result], str | bytes],
    to_markdown: Callable[[Result], str],
    to_csv: Callable[[Result], str],
    to_terminal: Callable[[Result, Console], None],
) -> None:
    """Write ``result`` in the chosen --format: text renderers return text, the terminal prints."""
    text = {"json": to_json, "markdown": to_markdown, "csv": to_csv}.get(args.format)
    if text is None:
        to_terminal(result, io.console)
        return
    out = text(result)
    if isinstance(out, str):
        io.out.write(out)
    elif hasattr(io.out, "buffer"):  # a byte stream under the text one (stdout): as it is
        io.out.flush()
        io.out.buffer.write(out)
    else:
        io.out.write(out.decode())
