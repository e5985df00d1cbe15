"""The store's hot reads: an experiment's measured values grouped by cell, variant and
metric, and its cells and variants — a pass over every run of an 80,000-run experiment,
where Python's tuple and five objects per row, and the grouping, cost more than the
statistics.

The store's backend does them (`dialect.Backend.experiment_values`). SQLite's are in Rust
(`crates/store`, `perflab._native`): each opens a second, read-only connection with the
URI of the store's own (the mode its reading connection succeeded with). One SQLite
library serves both connections (the system's, which Python's sqlite3 links), so they
share its per-file locks; `tests/store/test_store_read.py` checks it. PostgreSQL's group on the
server (`postgres_reads`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.store.faults import reads
from perflab.store.grouped import Grouped

if TYPE_CHECKING:
    from perflab.store.dialect import Backend


class HotReads:
    """The hot reads of `Store` (its base class). `prefetch` starts them in a thread — they
    release the GIL — so that a command reads the store while it imports numpy and the
    statistics; the reads then hand over what the thread read, or raise what it raised.
    The values and the cells are read in one pass over the runs, in one thread: on a
    2-core machine a third thread only takes the imports' core (measured: the imports took
    twice as long beside two reading threads)."""

    backend: Backend
    _prefetched: dict[int, _Pending]

    def prefetch(self, eid: int) -> None:
        """Start reading experiment ``eid``'s values, cells and variants in a thread."""
        self._prefetched = {eid: _Pending(self.backend.experiment_values, eid)}

    def _read(self, what: str, eid: int, read: Callable[[int], Any]) -> Any:
        """What the prefetch read of ``what`` ("values" or "cells"; each handed over once),
        else read now."""
        pending = getattr(self, "_prefetched", {}).get(eid)
        if pending is not None and what not in pending.taken:
            pending.taken.add(what)
            values, cells = pending.result()
            return values if what == "values" else cells
        return read(eid)

    @reads
    def measured_values(self, eid: int) -> tuple[Grouped, Grouped]:
        """Values and blocks of successful non-warm-up runs by (cell_key, variant, metric), in
        run order; groups in the order of their first run (`grouped.Grouped`: mappings whose
        lists are made when first read)."""
        keys, offsets, values, blocks = self._read("values", eid, self.backend.measured_values)
        return Grouped(keys, offsets, values, "d"), Grouped(keys, offsets, blocks, "q")

    @reads
    def run_devices(self, eid: int) -> dict[tuple[str, str, str], list[tuple[int, str]]]:
        """(block, device) of each measured value by (cell_key, variant, metric), in run
        order — the runs `measured_values` gives, of a pool's devices; empty when no run of
        the experiment ran on a pool's device."""
        if not self.backend.db.execute(
            "SELECT 1 FROM runs WHERE experiment_id=? AND device IS NOT NULL LIMIT 1", (eid,)
        ).fetchall():
            return {}
        out: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
        for r in self.backend.db.execute(
            "SELECT r.cell_key, r.variant, m.name, r.block, r.device FROM metrics m"
            " JOIN runs r ON r.id = m.run_id WHERE r.experiment_id=? AND r.status='ok'"
            " AND r.warmup=0 ORDER BY r.order_index",
            (eid,),
        ).fetchall():
            key = (r["cell_key"], r["variant"], r["name"])
            out.setdefault(key, []).append((r["block"], r["device"] or ""))
        return out

    @reads
    def cells_and_variants(self, eid: int) -> list[tuple[str, dict[str, str], str]]:
        """Distinct (cell_key, labels, variant) of every run, in order of first appearance."""
        return self.runs_overview(eid)[0]

    @reads
    def runs_overview(
        self, eid: int
    ) -> tuple[list[tuple[str, dict[str, str], str]], dict[str, int]]:
        """(`cells_and_variants`, `status_counts`) in one pass over the experiment's runs."""
        cells, counts = self._read("cells", eid, self.backend.cells_and_variants)
        # each distinct cell's labels parsed once, all in one document (one json.loads of
        # thousands of cells costs a tenth of thousands of calls)
        distinct = list(dict.fromkeys(cell for _, cell, _ in cells))
        parsed = json.loads(f"[{','.join(distinct)}]")
        if len(parsed) != len(distinct):  # (a damaged cell holding a comma: one at a time)
            parsed = [json.loads(cell) for cell in distinct]
        labels = dict(zip(distinct, parsed))
        return [(key, labels[cell], variant) for key, cell, variant in cells], dict(counts)


class _Pending:
    """``read(*args)`` running in a daemon thread; `result` waits for it and returns what it
    returned or raises what it raised. (concurrent.futures' Future would do, but importing
    that package — logging, traceback — costs 3 ms of a 0.3 s command.)"""

    def __init__(self, read: Callable[..., Any], *args: Any) -> None:
        self.taken: set[str] = set()  # the parts of the result handed over (`HotReads._read`)
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(read, *args), daemon=True)
        self._thread.start()

    def _run(self, read: Callable[..., Any], *args: Any) -> None:
        try:
            self._value = read(*args)
        except BaseException as e:  # handed to the reader, raised there (and worded by @reads)
            self._error = e

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
