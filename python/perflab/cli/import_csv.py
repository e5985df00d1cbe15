"""perflab import FILE... — per-run results from a CSV, or from a benchmark tool's result
files (``--format gobench|gbench|pytest-benchmark|hyperfine|criterion``), into the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option
from perflab.errors import InputError

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO

#: ``--format`` values: csv, then the tools of perflab.importers (its FORMATS; kept here
#: so that building the parser imports nothing of it).
FORMATS = ("csv", "gobench", "gbench", "pytest-benchmark", "hyperfine", "criterion")
#: Options only a CSV import takes (argparse's destination → the option).
CSV_ONLY = {"variant": "--variant", "param": "--param", "metric": "--metric"}


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "import",
        help="load per-run results from a CSV or a benchmark tool's result files",
        description="Load published per-run results so they can be compared: a CSV (one "
        "row per run) or the result files of Go's testing package, Google Benchmark, "
        "pytest-benchmark, hyperfine or criterion (--format). "
        "Prints the new experiment's id as the last line.",
    )
    p.add_argument(
        "file",
        nargs="+",
        help="CSV file with a header row; for --format, one or more result files "
        "(criterion: a target/criterion folder), each a variant",
    )
    add_store_option(p)
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="csv",
        help="what the files are (default csv): Go's benchmark format (go test -bench), "
        "Google Benchmark JSON, pytest-benchmark JSON, hyperfine JSON, criterion's folder",
    )
    p.add_argument("--variant", metavar="COL", help="CSV: column naming the variant of each run")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="COL",
        help="CSV: column of a matrix parameter (repeatable)",
    )
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="COL:higher|lower[:UNIT]",
        help="CSV: metric column and which direction is better (repeatable)",
    )
    p.add_argument(
        "--variant-from",
        metavar="KEY",
        default=None,
        help="--format: take the variant from this parameter or configuration key "
        "(e.g. algo, commit, command) instead of from the file",
    )
    p.add_argument(
        "--baseline",
        metavar="NAME",
        help="the variant others are compared against (--format: default the first)",
    )
    p.add_argument("--name", default=None, help="experiment name (default: the file name)")
    p.add_argument("--description", default="", help="one line saying what this is")
    series = p.add_argument_group("its place in a series (perflab history NAME)")
    series.add_argument(
        "--version", metavar="V", default=None, help="the version measured (v1.5, a date…)"
    )
    series.add_argument("--commit", metavar="C", default=None, help="the commit it was built from")
    series.add_argument(
        "--repo",
        metavar="R",
        default=None,
        help="its repository (a folder or a URL); a git work tree without --commit gives "
        "its HEAD commit",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    if args.format != "csv":
        return _run_tool(args, io)
    from perflab.api.importing import import_csv

    missing = [o for o, v in (("--variant", args.variant), ("--metric", args.metric)) if not v]
    missing += ["--baseline"] if args.baseline is None else []
    if missing:
        raise InputError(
            f"the following arguments are required: {', '.join(missing)} "
            "(see perflab import --help)"
        )
    if args.variant_from is not None:
        raise InputError("--variant-from is for --format imports; a CSV names it with --variant")
    if len(args.file) > 1:
        raise InputError(f"a CSV import reads one file; {len(args.file)} were given")
    done = import_csv(
        args.file[0],
        store=args.store or None,
        variant=args.variant,
        params=args.param,
        metrics=args.metric,
        baseline=args.baseline,
        name=args.name,
        description=args.description,
        version=args.version,
        commit=args.commit,
        repo=args.repo,
    )
    _imported(io, done.runs, done.store, done.experiment_id)
    return 0


def _run_tool(args: argparse.Namespace, io: CliIO) -> int:
    """A tool's result files: read and checked whole, then stored like any imported
    experiment (`perflab.api.importing`)."""
    from perflab.api.importing import import_results

    given = [o for dest, o in CSV_ONLY.items() if getattr(args, dest)]
    if given:
        raise InputError(
            f"{given[0]} is a CSV option; --format {args.format} derives variants, "
            "parameters and metrics from the files (see perflab import --help)"
        )
    done = import_results(
        args.format,
        args.file,
        store=args.store or None,
        variant_from=args.variant_from,
        baseline=args.baseline,
        name=args.name,
        description=args.description,
        version=args.version,
        commit=args.commit,
        repo=args.repo,
    )
    for note in done.notes:
        io.err.write(f"perflab: note: {note}\n")
    for warning in done.warnings:
        io.err.write(f"perflab: warning: {warning}\n")
    _imported(io, done.runs, done.store, done.experiment_id)
    return 0


def _imported(io: CliIO, n: int, path: str, eid: int) -> None:
    io.err.write(
        f"imported {n} runs into {path} as experiment {eid}; compare with: perflab compare {eid}\n"
    )
    io.print(str(eid))
