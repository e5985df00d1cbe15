"""Where the store is by default (light: the CLI's help text needs it without SQLite)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STORE = "perflab.db"


def default_store_path() -> Path:
    return Path(os.environ.get("PERFLAB_STORE") or DEFAULT_STORE)
