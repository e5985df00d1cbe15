"""Command line: parses arguments, calls one API function per command, prints.

Each command lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``handler(args, io) -> exit code``. `main` only turns errors
into exit codes.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from perflab.cli.exit_codes import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
)
from perflab.cli.io import CliIO
from perflab.errors import PerflabError

#: Command modules under perflab.cli, in the order `perflab --help` lists them.
COMMANDS = [
    "run",
    "ls",
    "show",
    "compare",
    "history",
    "bisect",
    "report",
    "import_csv",
    "export",
    "probe",
    "model",
    "cores",
    "check",
    "load",
    "store_copy",
]


class UsageError(Exception):
    """A command line argparse rejects: ``message`` is its one-line reason, ``prog`` the
    (sub)command it belongs to."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog, self.message = prog, message


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (no usage block): ``perflab: error:
    argument --threshold: not a percentage: 'abc' (see perflab compare --help)``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


class _Version(argparse.Action):
    """--version, reading the installed version only when asked (importlib.metadata ~25 ms)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from perflab._version import __version__

        sys.stdout.write(f"perflab {__version__}\n")  # main() points sys.stdout at its writer
        parser.exit()


#: Command names whose module is named otherwise.
_MODULE_OF = {"import": "import_csv", "store": "store_copy"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``command`` (the one on the command line) that
    command's alone, so that only its module is imported (~50 ms less to start)."""
    parser = _Parser(
        prog="perflab",
        description="Run performance experiments and tell, with confidence intervals, what changed.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    module = _MODULE_OF.get(command or "", command)
    for name in [module] if module in COMMANDS else COMMANDS:
        importlib.import_module(f"perflab.cli.{name}").register(sub)
    return parser


def main(
    argv: list[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    io = CliIO(stdout or sys.stdout, stderr or sys.stderr)
    try:
        code = _main(argv, io)
        io.out.flush()  # what is still buffered fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:  # e.g. `perflab compare 1 | head -1`: end quietly
        _drop_stdout()
        return EXIT_BROKEN_PIPE


#: Commands that only read the store and write to stdout: `console` ends them without
#: tearing the interpreter down.
QUICK_EXIT = frozenset({"compare", "show", "ls"})


def console() -> None:
    """The ``perflab`` program: `main`, and its exit code.

    After a read-only command (`QUICK_EXIT`), the interpreter's teardown — freeing every
    module and object one at a time — costs about 0.1 s, a sixth of a `perflab compare` of
    80,000 runs; once the output is flushed and the exit handlers have run, the process
    ends there and the operating system reclaims its memory at once. The cycle collector
    is off for such a command from the start: it builds millions of objects, nearly none
    in cycles, and the first collection after it was switched back on would scan them all
    (~20 ms for 80,000 runs) just before the process ends.

    Such a command also asks numpy's OpenBLAS for one thread (unless the user chose a
    number): loaded, OpenBLAS starts a worker per CPU that spins waiting for work it never
    gets here (no matrix worth a thread) — ~170 ms of CPU in a 0.25 s `compare`, taken
    from the store's read running beside the imports. The setting is safe only because
    these commands start no process that would inherit it."""
    quick = bool(sys.argv[1:2]) and sys.argv[1] in QUICK_EXIT
    if quick:
        gc.disable()
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (see above)
    code = main()
    if quick:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    sys.exit(code)


def _drop_stdout() -> None:
    """Point the process's stdout at /dev/null, as Python's documentation advises after a
    BrokenPipeError: the interpreter flushes stdout on exit, and what is still buffered
    would otherwise fail again ("Exception ignored … BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _main(argv: list[str] | None, io: CliIO) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    try:
        # argparse prints --help and --version itself: send them to our writers
        with contextlib.redirect_stdout(io.out), contextlib.redirect_stderr(io.err):
            args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    except UsageError as e:
        io.error(f"{e.message} (see {e.prog} --help)")  # io.error escapes control characters
        return EXIT_USAGE
    except PerflabError as e:  # an argument's type check with more to say than argparse's
        io.error(e.one_line())
        return EXIT_USAGE
    try:
        from perflab.cli.common import check_output_paths

        check_output_paths(args)  # before any work: nothing computed in vain, nothing half-written
        return int(args.handler(args, io) or 0)
    except PerflabError as e:
        io.error(e.one_line())
        return e.exit_code
    except (
        UnicodeDecodeError
    ) as e:  # a reader that did not say which file: still bad input, one line
        io.error(
            f"an input file is not UTF-8 text (byte {e.object[e.start : e.start + 1]!r} at offset {e.start})"
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        io.error("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    console()
