"""Options shared by several commands (declared once here)."""

from __future__ import annotations

import argparse

from perflab.store import Store, default_store_path


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="PATH", default=None,
                   help=f"results database (default: $PERFLAB_STORE or ./{default_store_path().name})")


def open_store(args) -> Store:
    return Store(args.store) if args.store else Store()
