"""The store's hot reads, in Rust (`crates/store`, `perflab._native`): an experiment's
measured values grouped by cell, variant and metric, and its cells and variants — a pass
over every run of an 80,000-run experiment, where Python's tuple and five objects per row,
and the grouping, cost more than the statistics.

Each opens a second, read-only connection with the URI of the store's own
(`Store.uri`, the mode its reading connection succeeded with). One SQLite library serves
both connections (the system's, which Python's sqlite3 links), so they share its per-file
locks; `tests/test_store_read.py` checks it."""

from __future__ import annotations

import json
from pathlib import Path

from perflab.store.connect import BUSY_TIMEOUT
from perflab.store.faults import reads

#: (cell_key, variant, metric) → the values, or the blocks, of its runs in run order.
Samples = dict[tuple[str, str, str], list[float]]
Blocks = dict[tuple[str, str, str], list[int]]


class HotReads:
    """The hot reads of `Store` (its base class)."""

    path: Path
    uri: str

    @reads
    def measured_values(self, eid: int) -> tuple[Samples, Blocks]:
        """Values and blocks of successful non-warm-up runs by (cell_key, variant, metric), in
        run order; groups in the order of their first run."""
        from perflab import _native

        return _native.measured_values(self.uri, eid, BUSY_TIMEOUT * 1000)

    @reads
    def cells_and_variants(self, eid: int) -> list[tuple[str, dict[str, str], str]]:
        """Distinct (cell_key, labels, variant) of every run, in order of first appearance."""
        from perflab import _native

        labels: dict[str, dict[str, str]] = {}
        return [
            (
                key,
                labels[cell] if cell in labels else labels.setdefault(cell, json.loads(cell)),
                variant,
            )
            for key, cell, variant in _native.cells_and_variants(self.uri, eid, BUSY_TIMEOUT * 1000)
        ]
