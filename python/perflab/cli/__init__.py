"""Command line: parses arguments, calls one API function per command, prints.

Each command lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``handler(args, io) -> exit code``. `main` only turns errors
into exit codes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from typing import TextIO

from perflab import __version__
from perflab.cli.io import CliIO
from perflab.errors import PerflabError

#: Command modules under perflab.cli, in the order `perflab --help` lists them.
COMMANDS = ["run", "ls", "show", "compare", "report", "import_csv", "probe", "model", "cores", "load"]

EXIT_OK = 0
EXIT_FAILED_CHECK = 1  # e.g. --fail-if-worse found a regression
EXIT_USAGE = 2  # bad input: spec, arguments, files
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perflab",
        description="Run performance experiments and tell, with confidence intervals, what changed.",
    )
    parser.add_argument("--version", action="version", version=f"perflab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"perflab.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    io = CliIO(stdout or sys.stdout, stderr or sys.stderr)
    parser = build_parser()
    try:
        # argparse prints usage errors and --help itself: send them to our writers
        with contextlib.redirect_stdout(io.out), contextlib.redirect_stderr(io.err):
            args = parser.parse_args(argv)
    except SystemExit as e:  # argparse already printed its one-line usage error
        return int(e.code or 0)
    try:
        return int(args.handler(args, io) or 0)
    except PerflabError as e:
        io.error(e.one_line())
        return EXIT_USAGE
    except KeyboardInterrupt:
        io.error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `perflab compare 1 | head`
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
