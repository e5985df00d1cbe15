"""A pool's boards sit apart (one runs 6% slower): their gap is no outlier, drift or second
mode of a variant's runs, which are diagnosed less their device's mean. The pool's runs
end to end are tests/execution/test_pool.py; there the blocks fall on the devices as they
come free, here one run of eight is on the slow board, where the raw runs flag it."""

from __future__ import annotations

import csv
import dataclasses

from cli_helpers import perflab
from perflab.analysis.against_baseline import compare_dataset
from perflab.analysis.dataset import load_dataset
from perflab.store import Database

SLOW_RUN = 5  # the one run of each variant on dut[1]


def _dataset(tmp_path):
    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "run", "v"])
        for variant, gain in (("a", 0), ("b", 2)):
            for r in range(8):
                board = 94 if r == SLOW_RUN else 100
                w.writerow([variant, r, board + gain + (r * 3 % 8) * 0.05])
    db = tmp_path / "p.db"
    r = perflab(
        "import", str(path), "--store", str(db), "--variant", "variant", "--baseline", "a",
        "--metric", "v:higher:ops/s",
    )  # fmt: skip
    assert r.code == 0, r.err
    with Database(db) as store:
        return load_dataset(store, 1)


def _outliers(data) -> set[str]:
    return {n.variant for n in compare_dataset(data).notes if n.warning.code == "outliers"}


def test_a_boards_gap_is_no_outlier_of_the_runs(tmp_path):
    data = _dataset(tmp_path)
    assert _outliers(data) == {"a", "b"}  # not known to be a pool: the slow board's run stands out
    boards = ["dut[1]" if r == SLOW_RUN else "dut[0]" for r in range(8)]
    pool = dataclasses.replace(data, devices=dict.fromkeys(data.samples, boards))
    assert _outliers(pool) == set()
