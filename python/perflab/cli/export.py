"""perflab export ID -o FILE — an experiment's runs as a tidy table (CSV or Parquet)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "export",
        help="write an experiment's runs as a table (CSV or Parquet)",
        description="Write the runs of an experiment as a tidy table, one row per run × "
        "metric: experiment, run_id, order, one column per matrix parameter, variant, "
        "repetition, block, warmup, metric, value, unit, better, status, host.",
    )
    p.add_argument("experiment", help="experiment id, name (latest of that name) or 'last'")
    add_store_option(p)
    p.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="runs.csv or runs.parquet; '-' for CSV on stdout (the default)",
    )
    p.add_argument(
        "--format",
        choices=["csv", "parquet"],
        default=None,
        help="instead of guessing from the file name",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api import Store
    from perflab.api.files import check_table_path, table_csv, write_table

    kind = check_table_path(args.output, args.format)  # before the store is read
    table = Store(args.store or None).runs(args.experiment)
    if args.output == "-":
        io.out.write(table_csv(table))
    else:
        write_table(table, args.output, kind)
    return 0
