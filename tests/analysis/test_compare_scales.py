"""The change on each scale, end to end through import + compare: a positive metric as a
ratio (never below −100%), a negative-valued one relative to |baseline| with the right
sign, and one whose baseline is within its noise of zero in the metric's own unit."""

from __future__ import annotations

import csv
import io
import json
import random

from cli_helpers import perflab


def store_with(tmp_path, rows: list[tuple[str, float, float, float]]):
    path = tmp_path / "runs.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "run", "throughput", "offset_ms", "drift_ms"])
        for i, row in enumerate(rows):
            w.writerow([row[0], i, *row[1:]])
    db = tmp_path / "p.db"
    r = perflab(
        "import",
        str(path),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--baseline",
        "a",
        "--metric",
        "throughput:higher:ops/s",
        "--metric",
        "offset_ms:higher:ms",
        "--metric",
        "drift_ms:lower:ms",
    )
    assert r.code == 0, r.err
    return db


def test_each_scale_reads_right_in_every_format(tmp_path):
    rng = random.Random(3)
    rows = []
    for _ in range(10):
        # throughput: heavy-tailed, always positive, falls by ~60%; offset: negative values that
        # rise towards zero (-10 → -5: +50% relative to |baseline|); drift: baseline around 0
        rows.append(
            ("a", 1000 * rng.lognormvariate(0, 0.6), -10 + rng.gauss(0, 0.5), rng.gauss(0, 0.3))
        )
        rows.append(
            ("b", 400 * rng.lognormvariate(0, 0.6), -5 + rng.gauss(0, 0.5), 3 + rng.gauss(0, 0.3))
        )
    db = store_with(tmp_path, rows)
    doc = json.loads(perflab("compare", "1", "--store", str(db), "--format", "json").out)
    by_metric = {c["metric"]: c for c in doc["comparisons"]}
    thr, off, drift = by_metric["throughput"], by_metric["offset_ms"], by_metric["drift_ms"]
    assert thr["scale"] == "ratio" and thr["low"] > -1 and thr["estimate"] < 0
    assert (
        off["scale"] == "relative" and 0 < off["low"] <= off["estimate"] <= off["high"]
    )  # a rise is +
    assert (
        drift["scale"] == "absolute" and 2 < drift["low"] <= drift["estimate"] <= drift["high"] < 4
    )
    assert drift["tldr"].endswith(" ms") and drift["tldr"].startswith("+[")
    for c in (thr, off, drift):  # the agreement rule, as exported
        assert (
            c["significant"]
            == (c["low"] > 0 or c["high"] < 0)
            == (c["p_value"] <= 1 - doc["confidence"])
        )
    rows_csv = {
        r["metric"]: r
        for r in csv.DictReader(
            io.StringIO(perflab("compare", "1", "--store", str(db), "--format", "csv").out)
        )
        if r["method"] != "sweep"
    }
    assert rows_csv["drift_ms"]["scale"] == "absolute" and rows_csv["drift_ms"]["change_pct"] == ""
    assert 2 < float(rows_csv["drift_ms"]["change"]) < 4
    assert float(rows_csv["throughput"]["ci_low_pct"]) > -100
    term = perflab("compare", "1", "--store", str(db), "--no-summary")
    assert term.code == 0 and " ms" in term.out
