"""perflab ls — the experiments in the store."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option, open_store
from perflab.cli.lazy_rich import Table
from perflab.report.safe_text import terminal_safe

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO


def register(sub: Subparsers) -> None:
    p = sub.add_parser("ls", help="list stored experiments")
    add_store_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    with open_store(args) as store:
        rows = store.experiments()
        # why each experiment stopped by an error did (a host unreachable...)
        reasons = {e.id: store.stop_reason(e.id) for e, _ in rows if e.status == "stopped"}
    if args.json:
        io.out.write(
            json.dumps(
                [
                    {
                        "id": e.id,
                        "name": e.name,
                        "status": e.status,
                        **({"reason": reasons[e.id]} if reasons.get(e.id) else {}),
                        "source": e.source,
                        "created_at": e.created_at,
                        "runs": counts,
                    }
                    for e, counts in rows
                ],
                indent=2,
            )
            + "\n"
        )
        return 0
    if not rows:
        io.print(f"no experiments in {store.path}")
        return 0
    t = Table(header_style="bold")
    for col, just in (
        ("id", "right"),
        ("name", "left"),
        ("created", "left"),
        ("status", "left"),
        ("runs ok/total", "right"),
        ("failed", "right"),
        ("source", "left"),
    ):
        t.add_column(col, justify=just, no_wrap=True)
    for e, counts in rows:
        total = sum(counts.values())
        failed = counts.get("failed", 0) + counts.get("timeout", 0)
        created = dt.datetime.fromtimestamp(e.created_at).strftime("%Y-%m-%d %H:%M")
        t.add_row(
            str(e.id),
            e.name,
            created,
            e.status,
            f"{counts.get('ok', 0)}/{total}",
            str(failed) if failed else "",
            e.source,
        )
    io.console.print(t)
    for eid, reason in sorted(reasons.items()):
        if reason:
            io.print(f"experiment {eid} stopped: {terminal_safe(reason, one_line=True)}")
    return 0
