"""perflab cores — the CPU topology, and N cores to pin work to (the router
performance-index experiment's rule)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from perflab.cli.lazy_rich import Table

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "cores",
        help="show CPU topology; --pick N chooses N cores to pin to",
        description="Without --pick: the machine's logical CPUs (SMT siblings, L2 sharing, "
        "max frequency, core type). With --pick N: N cores of one type, no two "
        "SMT siblings, avoiding shared L2 caches where possible.",
    )
    p.add_argument("--pick", type=int, metavar="N", help="choose N cores")
    p.add_argument(
        "--type", dest="core_type", choices=["P", "E"], help="only P- or E-cores (hybrid CPUs)"
    )
    p.add_argument(
        "--exclude",
        metavar="CPULIST",
        default="",
        help="CPUs not to use, e.g. 0,1 or 0-3 (their SMT siblings are left out too)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only the chosen CPU list (e.g. for taskset -c)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.machine import cpu_list
    from perflab.platform import pick_cores, read_topology

    exclude = cpu_list(args.exclude)
    if args.pick is None:
        topo = read_topology()
        if args.json:
            io.print(json.dumps({"cpus": topo.to_json()}, indent=2))
            return 0
        t = Table(title="CPU topology")
        for col in (
            "cpu",
            "package",
            "SMT siblings",
            "L2 shared with",
            "max freq (GHz)",
            "type",
            "usable",
        ):
            t.add_column(
                col, justify="right" if col in ("cpu", "package", "max freq (GHz)") else "left"
            )
        for c in topo.cpus:
            t.add_row(
                str(c.cpu),
                str(c.package),
                _fmt(c.siblings),
                _fmt(c.l2) if c.l2 is not None else "?",
                f"{c.max_freq_khz / 1e6:.2f}" if c.max_freq_khz else "?",
                c.core_type or "-",
                "yes" if c.online and c.allowed else "no",
            )
        io.console.print(t)
        return 0
    choice = pick_cores(args.pick, read_topology(), core_type=args.core_type, exclude=exclude)
    if args.json:
        io.print(json.dumps(choice.to_json(), indent=2))
    elif args.quiet:
        io.print(",".join(map(str, choice.cpus)))
    else:
        io.print(
            f"cpus: {','.join(map(str, choice.cpus))}  ({len(choice.cpus)} physical cores, "
            f"type: {choice.core_type})"
        )
        for note in choice.notes:
            io.print(f"note: {note}")
    return 0


def _fmt(cpus: Iterable[int]) -> str:
    return ",".join(map(str, sorted(cpus)))
