"""Monitor series of the compared runs (read from the store by the use-case layer,
`perflab.api.run_reader`) for the report's time-series panels: the measured runs of each
(phase, cell, variant)."""

from __future__ import annotations

from dataclasses import dataclass

from perflab.observe.monitors import MonitorSeries

#: Runs drawn per (phase, cell, variant): enough to see their spread, few enough to read.
MAX_RUNS = 12


@dataclass(frozen=True)
class MonitorRuns:
    """One phase's series of the measured runs of one cell × variant (each from its start)."""

    phase: str
    cell_key: str
    variant: str
    series: tuple[MonitorSeries, ...]
