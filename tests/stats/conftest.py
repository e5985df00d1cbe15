"""Shared fixtures of the statistics tests."""

from __future__ import annotations

import pytest
from testdata import MGLRU_RUNS, csv_rows


@pytest.fixture(scope="session")
def mglru():
    """get(variant, ram_pct, metric) -> list of the 10 runs' values, in run order."""
    rows = csv_rows(MGLRU_RUNS)
    assert len(rows) == 40

    def get(variant: str, ram: str, metric: str) -> list[float]:
        return [
            float(r[metric])
            for r in rows
            if r["variant"] == variant and r["ram_utilization_pct"] == ram
        ]

    return get
