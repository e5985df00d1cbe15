"""Test vectors inside the repository (tests/data/): each file's first line says where its
figures come from, as a `#` comment that perflab's CSV readers skip."""

from __future__ import annotations

import csv
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

#: 40 per-run rows of the MGLRU memcached experiment (baseline vs MGLRU at ~90% / ~110% RAM).
MGLRU_RUNS = DATA / "mglru-memcached-runs.csv"
#: The router performance-index experiment's three platforms.
ROUTER_PLATFORMS = DATA / "router-platforms.csv"


def mglru_import(*metrics: str) -> list[str]:
    """`perflab import` arguments for MGLRU_RUNS with these ``--metric`` specs
    (``name:better[:unit]``); the baseline variant is the last argument."""
    args = ["--variant", "variant", "--param", "ram_utilization_pct"]
    for m in metrics:
        args += ["--metric", m]
    return [*args, "--baseline", "baseline"]


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a test-vector CSV, its leading `#` lines skipped."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))
