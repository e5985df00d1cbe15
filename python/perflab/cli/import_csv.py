"""perflab import FILE.csv — per-run results from a CSV into the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option, open_store

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "import",
        help="load per-run results from a CSV (one row per run)",
        description="Load published per-run results so they can be compared. "
        "Prints the new experiment's id as the last line.",
    )
    p.add_argument("file", help="CSV file with a header row")
    add_store_option(p)
    p.add_argument(
        "--variant", required=True, metavar="COL", help="column naming the variant of each run"
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="COL",
        help="column of a matrix parameter (repeatable)",
    )
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        required=True,
        metavar="COL:higher|lower[:UNIT]",
        help="metric column and which direction is better (repeatable)",
    )
    p.add_argument(
        "--baseline", required=True, metavar="NAME", help="the variant others are compared against"
    )
    p.add_argument("--name", default=None, help="experiment name (default: the file name)")
    p.add_argument("--description", default="", help="one line saying what this is")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.csv_import import MetricColumn, read_runs_csv, store_runs

    metrics = [MetricColumn.parse(m) for m in args.metric]
    # the whole file is read and checked first: a bad CSV creates no store and writes nothing
    parsed = read_runs_csv(
        args.file,
        variant_col=args.variant,
        param_cols=args.param,
        metrics=metrics,
        baseline=args.baseline,
    )
    with open_store(args, write=True) as store:
        eid = store_runs(
            store,
            parsed,
            param_cols=args.param,
            metrics=metrics,
            baseline=args.baseline,
            name=args.name,
            description=args.description,
        )
        n = len(store.runs(eid))
    io.err.write(
        f"imported {n} runs into {store.path} as experiment {eid}; "
        f"compare with: perflab compare {eid}\n"
    )
    io.print(str(eid))
    return 0
