"""The hot reads of a PostgreSQL store (`perflab.store.hot_reads`), grouped on the server:
one row per (cell, variant, metric) with its values and blocks as arrays in run order,
handed over in the buffers the SQLite store's Rust reader gives (`dialect.RawValues`).

The orders are the Rust reader's: groups by their first run, and within a run by metric
name; cells and variants by first appearance; statuses by name (text columns compare byte
by byte: `postgres_schema`)."""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflab.store.dialect import Connection, RawCells, RawValues

_GROUPED_VALUES = (
    "SELECT r.cell_key, r.variant, m.name,"
    " array_agg(m.value ORDER BY r.order_index) AS vals,"
    " array_agg(r.block ORDER BY r.order_index) AS blocks"
    " FROM runs r JOIN metrics m ON m.run_id = r.id"
    " WHERE r.experiment_id = ? AND r.status = 'ok' AND r.warmup = 0"
    " GROUP BY r.cell_key, r.variant, m.name"
    " ORDER BY min(r.order_index), m.name"
)

_FIRST_OF_EACH_CELL = (
    "SELECT cell_key, cell, variant FROM ("
    " SELECT DISTINCT ON (cell_key, variant) cell_key, cell, variant, order_index"
    " FROM runs WHERE experiment_id = ? ORDER BY cell_key, variant, order_index"
    ") AS firsts ORDER BY order_index"
)

_STATUS_COUNTS = (
    "SELECT status, count(*) AS n FROM runs WHERE experiment_id = ? GROUP BY status ORDER BY status"
)


def measured_values(db: Connection, eid: int) -> RawValues:
    """(keys, offsets, values, blocks) of experiment ``eid``'s successful measured runs."""
    keys: list[tuple[str, str, str]] = []
    offsets, values, blocks = array("Q", [0]), array("d"), array("q")
    for row in db.execute(_GROUPED_VALUES, (eid,)):
        keys.append((row["cell_key"], row["variant"], row["name"]))
        values.extend(row["vals"])
        blocks.extend(row["blocks"])
        offsets.append(len(values))
    return keys, offsets.tobytes(), values.tobytes(), blocks.tobytes()


def cells_and_variants(db: Connection, eid: int) -> RawCells:
    """(cell_key, cell JSON, variant) of every run in order of first appearance, and the
    runs per status."""
    cells = [
        (r["cell_key"], r["cell"], r["variant"]) for r in db.execute(_FIRST_OF_EACH_CELL, (eid,))
    ]
    counts = [(r["status"], r["n"]) for r in db.execute(_STATUS_COUNTS, (eid,))]
    return cells, counts
