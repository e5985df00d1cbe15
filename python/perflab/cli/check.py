"""perflab check — is this machine ready to measure? Governor, turbo, SMT, load and the
busiest processes, memory and swap, thermal throttling, ASLR, perf_event_paranoid.

Exit code: 0 when every check is ok (or unknown), 1 when any warns."""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING

from perflab.cli.lazy_rich import Table, Text

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO

EXIT_WARN = 1
WIDTH = 80  # the table and the advice fit 80 columns

_STYLE = {"ok": "green", "warn": "yellow", "unknown": "dim"}


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check",
        help="check this machine for steady measurements (exit 1 on a warning)",
        description="Reads /proc and /sys: CPU frequency governor, turbo boost, SMT, load "
        "average and the busiest other processes (measured over ~0.25 s), free memory and "
        "swap, thermal throttle counters, ASLR, perf_event_paranoid. Each is ok, warn (with "
        "what to do) or unknown (with why: a VM, a container, not Linux). Exit code 0 when "
        "nothing warns, 1 when something does. The same checks are recorded with every "
        "experiment, at its start and after each block. With an experiment file and "
        "--host NAME: that host, read over SSH as a run reads it.",
    )
    p.add_argument(
        "spec",
        nargs="?",
        metavar="EXPERIMENT.toml",
        help="the experiment file whose host --host names",
    )
    p.add_argument(
        "--host",
        metavar="NAME",
        help="check host NAME of the experiment file over SSH, as a run reads it (a "
        "device booted by its control must be up)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.machine import check_machine
    from perflab.report.safe_text import terminal_safe

    def connecting(name: str) -> None:
        if not args.json:
            io.err.write(f"perflab: reading host {name} over SSH…\n")

    machine = check_machine(args.spec, args.host, connecting)
    state = machine.state
    code = EXIT_WARN if state.warnings else 0
    if args.json:
        io.print(json.dumps({**machine.to_json(), "exit_code": code}, indent=2))
        return code
    t = Table(title=f"System checks of {machine.host}: {machine.summary}")
    t.add_column("check", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("value", overflow="fold")
    for c in state.checks:
        t.add_row(
            c.title,
            Text(c.status, style=_STYLE[c.status]),
            Text(terminal_safe(c.value, one_line=True)),
        )
    io.console.print(t, width=min(io.console.width, WIDTH))
    for c in state.checks:
        if c.message and c.status != "ok":
            line = f"{c.status}: {c.title}: {terminal_safe(c.message, one_line=True)}"
            io.print(textwrap.fill(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False))
    return code
