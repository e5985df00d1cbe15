"""Monitor series of the compared runs, read from the store (artifacts ``monitor:PHASE``)
for the report's time-series panels: the measured runs of each (phase, cell, variant)."""

from __future__ import annotations

from dataclasses import dataclass

from perflab.analysis.cross import RunOrigin
from perflab.observe.monitors import MonitorSeries
from perflab.store import Store

#: Runs drawn per (phase, cell, variant): enough to see their spread, few enough to read.
MAX_RUNS = 12


@dataclass(frozen=True)
class MonitorRuns:
    """One phase's series of the measured runs of one cell × variant (each from its start)."""

    phase: str
    cell_key: str
    variant: str
    series: tuple[MonitorSeries, ...]


def load_monitor_runs(store: Store, origins: list[RunOrigin]) -> list[MonitorRuns]:
    found: dict[tuple[str, str, str], list[MonitorSeries]] = {}
    for origin in origins:
        eid = origin.experiment_id
        for r in store.runs(eid, ["ok"]):
            target = origin.mapping.get((r.cell_key, r.variant))
            if target is None or r.warmup:
                continue
            for name, _size in store.artifact_names(eid, r.id):
                if not name.startswith("monitor:"):
                    continue
                runs = found.setdefault((name[8:], *target), [])
                if len(runs) >= MAX_RUNS:
                    continue
                try:
                    runs.append(MonitorSeries.from_bytes(store.artifact(eid, name, r.id) or b""))
                except ValueError:
                    continue  # not readable: the run's other data is still shown
    return [MonitorRuns(p, c, v, tuple(s)) for (p, c, v), s in found.items() if s]
