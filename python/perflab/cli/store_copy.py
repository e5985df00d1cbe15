"""perflab store copy SRC DST [EXPERIMENT...] — experiments from one store into another:
a SQLite file or a PostgreSQL database, either way (`perflab.api.stores`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.cli.common import store_argument

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO
    from perflab.store.copy import Copied


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "store",
        help="copy experiments between stores (SQLite files, PostgreSQL databases)",
        description="Work on whole stores. A store is a SQLite file or a PostgreSQL "
        "database, postgresql://USER@HOST[:PORT]/DB.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = actions.add_parser(
        "copy",
        help="copy experiments from SRC into DST",
        description="Copy experiments — runs, values, environments, artifacts, everything — "
        "from store SRC into store DST (made if missing), each as a new experiment with new "
        "ids, in one transaction: an experiment is in DST whole or not at all. SRC is only "
        "read. A line per experiment copied goes to stderr.",
    )
    c.add_argument("source", metavar="SRC", type=store_argument, help="the store to copy from")
    c.add_argument("destination", metavar="DST", type=store_argument, help="the store to copy into")
    c.add_argument(
        "experiment",
        nargs="*",
        metavar="EXPERIMENT",
        help="experiment id, name (latest of that name) or 'last' (default: every "
        "experiment, oldest first)",
    )
    c.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.stores import copy_store
    from perflab.store.location import store_location

    def progress(k: int, n: int, copied: Copied) -> None:
        io.err.write(
            f"perflab: [{k}/{n}] experiment {copied.source_id} → {copied.id}: "
            f"{copied.runs} runs, {copied.values} values, {copied.artifacts} artifacts "
            f"({copied.artifact_bytes / 1024:.1f} KiB stored)\n"
        )
        io.err.flush()

    done = copy_store(args.source, args.destination, args.experiment, progress)
    # (a store as messages name it: a URL without its password)
    if not done:
        io.print(f"no experiments in {store_location(args.source)}: nothing copied")
        return 0
    ids = ", ".join(f"{c.source_id} as {c.id}" for c in done)
    n = f"{len(done)} experiment{'s' * (len(done) != 1)}"
    io.print(f"copied {n} into {store_location(args.destination)}: {ids}")
    return 0
