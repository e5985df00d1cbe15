"""Options shared by several commands (declared once here)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

from perflab.errors import InputError
from perflab.stats.options import (
    CORRECTIONS,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
    MANNWHITNEY_SCALES,
    WELCH_INTERVALS,
)
from perflab.store.location import DEFAULT_STORE

if TYPE_CHECKING:
    from perflab.analysis.request import ComparisonRequest
    from perflab.store import Database

    #: What each command's ``register`` adds its parser to (argparse's type has no public name).
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
    #: A parser or an argument group: what ``add_argument`` is called on.
    Arguments: TypeAlias = argparse._ActionsContainer


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        type=store_argument,
        help="results database: a SQLite file, or postgresql://USER@HOST[:PORT]/DB "
        f"(default: $PERFLAB_STORE or ./{DEFAULT_STORE})",
    )


def store_argument(text: str) -> str:
    """A --store value, as given; one that looks like a URL but names no kind of store
    perflab has (``http://…``) is refused before the command does anything (StoreError)."""
    from perflab.store.location import store_location

    store_location(text)
    return text


def open_store(args: argparse.Namespace, *, write: bool = False, create: bool = True) -> Database:
    """The --store (or default) store: a SQLite file or a PostgreSQL URL. Reading commands
    (the default) create and change nothing: a missing store is an error. write=True
    creates it unless create=False."""
    from perflab.api.stores import open_store as open_named

    return open_named(args.store or None, write=write, create=create)


def pct(text: str) -> float:
    """A percentage argument: ``5``, ``5%`` or ``0.5%`` → percent as a float ≥ 0.

    An argparse ``type=``: a bad value is argparse's one-line usage error
    (``argument --threshold: not a percentage: 'abc'``)."""
    t = text.strip().removesuffix("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (e.g. 5 or 0.5%)") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"percentage must be a number ≥ 0: {text!r}")
    return v


#: Arguments naming files a command writes ('-' is stdout): checked before any work starts.
OUTPUT_ARGUMENTS = ("output", "screenshot", "export", "plot")


def check_output_paths(args: argparse.Namespace) -> None:
    """InputError (one line naming the path) for an output file that cannot be written —
    a missing folder that cannot be created, a parent that is a file, a read-only folder —
    before the command does any work, so that nothing is computed in vain or half-written."""
    from perflab.report.writable import check_writable

    for name in OUTPUT_ARGUMENTS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str) and path != "-":
                check_writable(path, "--" + name)


def add_analysis_options(p: argparse.ArgumentParser) -> None:
    """How comparisons are computed: shared by compare and report (declared once here)."""
    _statistics_options(p.add_argument_group("statistics (see README, 'How perflab decides')"))
    _scaling_options(
        p.add_argument_group(
            "scaling fit over a numeric matrix parameter (see README, 'How perflab decides')"
        )
    )


def _statistics_options(g: Arguments) -> None:
    """Method, interval, confidence, threshold and correction of the comparisons."""
    g.add_argument(
        "--method",
        default="auto",
        metavar="NAME",
        help="auto (default: Welch, or Mann–Whitney where a cell's runs are outlying or "
        "skewed), welch, bootstrap, mannwhitney or paired",
    )
    g.add_argument(
        "--interval",
        choices=WELCH_INTERVALS,
        default=None,
        help="welch: auto (default: Fieller's where the change is large next to the baseline's "
        "uncertainty), difference, or fieller",
    )
    g.add_argument(
        "--statistic",
        default=None,
        metavar="STAT",
        help="bootstrap: mean (default), median, or a percentile of the runs like p90",
    )
    g.add_argument(
        "--resamples",
        type=int,
        default=None,
        metavar="N",
        help=f"bootstrap resamples ({DEFAULT_RESAMPLES})",
    )
    g.add_argument(
        "--scale",
        choices=MANNWHITNEY_SCALES,
        default=None,
        help="mannwhitney: Hodges-Lehmann on the ratio or shift scale",
    )
    g.add_argument(
        "--confidence",
        type=float,
        default=None,
        metavar="LEVEL",
        help="confidence level, e.g. 0.99 (default: the experiment's, 0.95)",
    )
    g.add_argument(
        "--threshold",
        type=pct,
        default=0.0,
        metavar="PCT",
        help="practical threshold, e.g. 1%%: smaller significant changes read 'within noise'",
    )
    g.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default=DEFAULT_CORRECTION,
        help="multiple-comparison correction over the table (default holm: the chance of "
        "any false change ≤ 5%%, changes found shown at 95%% each; bh: the false "
        "discovery rate; none: each comparison on its own)",
    )
    g.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="NAME",
        help="only this metric in the table, summaries, report and scaling fits "
        "(repeatable; default: every metric)",
    )


def _scaling_options(s: Arguments) -> None:
    """The cost = a + b·PARAM^k fit over a numeric matrix parameter."""
    s.add_argument(
        "--scaling",
        metavar="PARAM",
        default=None,
        help="fit cost = a + b·PARAM^k per variant and metric (per combination of the other "
        "parameters) and compare each variant's per-unit cost with the baseline's",
    )
    s.add_argument(
        "--exponent",
        type=float,
        default=None,
        metavar="K",
        help="with --scaling: fix k (1 = linear) instead of fitting it",
    )
    s.add_argument(
        "--at",
        default=None,
        metavar="N",
        help="with --scaling: per-unit costs at PARAM = N, e.g. 10M (default: the largest value)",
    )


def add_experiment_arguments(p: argparse.ArgumentParser, verb: str) -> None:
    """ID [B] and --variant: one experiment, or B against A (compare and report)."""
    p.add_argument("experiment", help="experiment id, name (latest of that name) or 'last'")
    p.add_argument(
        "other",
        nargs="?",
        default=None,
        metavar="B",
        help=f"a second experiment: {verb} B against the first as the baseline, matched by "
        "cell, variant and metric",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=None,
        metavar="NAME[=NAME_B]",
        help="with B: compare only this variant (repeatable), or pair variant NAME of the "
        "first experiment with NAME_B of B",
    )


def add_across_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--across",
        metavar="PARAM=VALUE",
        default=None,
        help="compare every cell with the cell where PARAM=VALUE (and the same other "
        "parameters), within each variant, instead of each variant with the baseline",
    )


def comparison_request(
    args: argparse.Namespace, *, table: bool = True, movers: bool = False
) -> ComparisonRequest:
    """The question `perflab compare` / `perflab report` were asked, checked (InputError):
    the flags that go only with others here, the rest by `perflab.analysis.request.ask`."""
    from perflab.analysis.request import ask

    if args.variant and args.other is None:
        raise InputError("--variant pairs variants of two experiments: name a second experiment B")
    if args.scaling is None:
        given = [o for o, v in (("--exponent", args.exponent), ("--at", args.at)) if v is not None]
        if given:
            raise InputError(
                f"{given[0]} goes with --scaling PARAM (the numeric matrix parameter to fit over)"
            )
    return ask(
        args.experiment,
        args.other,
        variants=args.variant or (),
        across=args.across,
        scaling=args.scaling,
        exponent=args.exponent,
        at=args.at,
        metrics=args.metric or (),
        table=table,
        movers=movers,
        flags=True,
        method=args.method,
        confidence=args.confidence,
        threshold=args.threshold / 100,
        correction=args.correction,
        interval=args.interval,
        statistic=args.statistic,
        resamples=args.resamples,
        scale=args.scale,
    )


#: What the last command built and printed (`keep_until_exit`).
_KEPT: list[Any] = []


def keep_until_exit(result: Any) -> None:
    """Hold ``result`` after the command returns (the last one only), so that the program,
    which ends without the interpreter's teardown (`perflab.cli.console`), does not free
    its objects one by one first: ~0.05 s for the tables of 80,000 runs."""
    _KEPT[:] = [result]


@contextlib.contextmanager
def without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off for the block: a reading command that builds a large
    table (an 80,000-run comparison allocates millions of objects, nearly none of them in
    cycles) spends ~15% of its time in the collector's passes otherwise. The process ends
    soon after; what cycles there are are left to the collector, which runs again after the block."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
