"""Shared fixtures of the statistics tests."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

SEED0 = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "seed0-mglru-memcached.csv"


@pytest.fixture(scope="session")
def seed0():
    """get(variant, ram_pct, metric) -> list of the 10 runs' values, in run order."""
    rows = list(csv.DictReader(SEED0.open()))
    assert len(rows) == 40

    def get(variant: str, ram: str, metric: str) -> list[float]:
        return [float(r[metric]) for r in rows if r["variant"] == variant and r["ram_utilization_pct"] == ram]

    return get
