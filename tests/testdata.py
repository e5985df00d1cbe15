"""Test vectors inside the repository (tests/data/): each file's first line says where its
figures come from, as a `#` comment that perflab's CSV readers skip."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

#: 40 per-run rows of the MGLRU memcached experiment (baseline vs MGLRU at ~90% / ~110% RAM).
MGLRU_RUNS = DATA / "mglru-memcached-runs.csv"
#: The router performance-index experiment's three platforms.
ROUTER_PLATFORMS = DATA / "router-platforms.csv"
#: `perflab model`'s column arguments for ROUTER_PLATFORMS (the published platforms' figures).
ROUTER_MODEL_COLUMNS = [
    "--cpu", "coremark_per_core",
    "--memmove", "memmove_gbit_per_sec_as_used_in_seed", "--memmove-unit", "Gbit/s",
    "--length", "packet_len_bytes",
    "--rate", "rate_pkts_per_sec",
]  # fmt: skip


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


#: The one minimal valid experiment file (the spec-error tests edit it one key at a time).
MINIMAL_SPEC = """\
name = "demo"
baseline = "a"
repetitions = 3

[matrix]
size = [1, 2]

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
command = "echo {size}"

[[metric]]
name = "wall_time"
better = "lower"
"""


#: A tiny experiment of echo commands (2 cells × 2 variants × 3 runs + warm-ups).
TINY = """\
name = "api-tiny"
baseline = "a"
repetitions = 3
warmup = 1

[matrix]
n = [1, 2]

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
command = "echo n={n} variant={variant}"

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
[[metric]]
name = "n_out"
regex = "n=(?P<value>[0-9]+)"
better = "higher"
"""


def fingerprint(folder):
    """Every file of ``folder`` with its content's hash: what a reader must not change."""
    return {
        p.name: "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
    }
