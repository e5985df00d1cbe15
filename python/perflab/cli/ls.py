"""perflab ls — the experiments in the store."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import TYPE_CHECKING, Any

from perflab.cli.common import add_store_option, open_store
from perflab.cli.lazy_rich import Table
from perflab.report.safe_text import terminal_safe

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO
    from perflab.records import ExperimentRow


def register(sub: Subparsers) -> None:
    p = sub.add_parser("ls", help="list stored experiments")
    add_store_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.experiments import list_experiments

    with open_store(args) as store:
        listing = list_experiments(store)
    rows, reasons = listing.experiments, listing.reasons
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
                        "user": e.user,
                        "controller_host": e.controller_host,
                        "version": e.version,
                        "source_commit": e.source_commit,
                        "source_repo": e.source_repo,
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
    # who stored each experiment, from which controller: a column in a store shared by
    # several, when the terminal has room for it (a single user's store lists as it always
    # did; `ls --json` and `show` always say)
    t = _table(rows, by=len({_who(e) for e, _ in rows} - {""}) > 1)
    unbounded = io.console.options.update_width(1 << 20)  # the table's natural width
    if len(t.columns) > 7 and io.console.measure(t, options=unbounded).maximum > io.console.width:
        t = _table(rows, by=False)
    io.console.print(t)
    for eid, reason in sorted(reasons.items()):
        if reason:
            io.print(f"experiment {eid} stopped: {terminal_safe(reason, one_line=True)}")
    return 0


def _table(rows: list[tuple[ExperimentRow, dict[str, int]]], *, by: bool) -> Any:
    """The experiments as a (rich) table; ``by``: with who stored each, from which controller."""
    t = Table(header_style="bold")
    versions = any(e.version for e, _ in rows)  # a column when any has one (perflab history)
    for col, just in (
        ("id", "right"),
        ("name", "left"),
        *([("version", "left")] if versions else []),
        ("created", "left"),
        ("status", "left"),
        ("ok/total", "right"),
        ("failed", "right"),
        ("source", "left"),
        *([("by", "left")] if by else []),
    ):
        if col in ("name", "version", "by"):  # long text folds onto more lines
            t.add_column(col, justify=just, overflow="fold")
        else:  # never elided: an id is what every other command takes
            widest = max((len(_cell(e, counts, col)) for e, counts in rows), default=1)
            t.add_column(col, justify=just, no_wrap=True, min_width=max(widest, len(col)))
    for e, counts in rows:
        total = sum(counts.values())
        failed = counts.get("failed", 0) + counts.get("timeout", 0)
        created = _created(e.created_at)
        t.add_row(
            str(e.id),
            e.name,
            *([e.version or ""] if versions else []),
            created,
            e.status,
            f"{counts.get('ok', 0)}/{total}",
            str(failed) if failed else "",
            e.source,
            *([_who(e)] if by else []),
        )
    return t


def _cell(e: ExperimentRow, counts: dict[str, int], col: str) -> str:
    """The text of column ``col`` for ``e`` (for the columns that never fold)."""
    failed = counts.get("failed", 0) + counts.get("timeout", 0)
    return {
        "id": str(e.id),
        "created": _created(e.created_at),
        "status": e.status,
        "ok/total": f"{counts.get('ok', 0)}/{sum(counts.values())}",
        "failed": str(failed) if failed else "",
        "source": e.source,
    }.get(col, "")


#: How far back (and ahead: a clock set wrong) a date shows its time rather than its year.
_RECENT_S = 182 * 24 * 3600


def _created(when: float, now: float | None = None) -> str:
    """A date as `ls -l` gives one, 12 characters: "Nov 28 21:01" within half a year of
    now, else "Nov 28  2025" (the full date and time: `perflab show ID`, `ls --json`)."""
    t = dt.datetime.fromtimestamp(when)
    recent = abs((time.time() if now is None else now) - when) < _RECENT_S
    return f"{t:%b} {t.day:2d} " + (f"{t:%H:%M}" if recent else f" {t.year}")


def _who(e: ExperimentRow) -> str:
    """``user@host`` that stored ``e``; "" for an experiment stored before perflab said."""
    if not (e.user or e.controller_host):
        return ""
    return f"{e.user or '?'}@{e.controller_host or '?'}"
