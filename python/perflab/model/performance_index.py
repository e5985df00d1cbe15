"""The router performance-index experiment's performance index: I = rate × (1/cpu + M·L/C + N).

Units: cpu in iterations/s, C in bytes/s, L in bytes, rate in packets/s, N in seconds
per packet; M is dimensionless. Each term is a time per packet (seconds), so
I = rate × predicted time per packet is the ratio of the time the model charges to
the time the platform actually took: a code-efficiency index, the same on every
platform when the model holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from perflab.errors import InputError
from perflab.model.observations import Observation, check


def per_packet_time(o: Observation, M: float, N: float) -> float:
    """1/cpu + M·L/C + N, in seconds."""
    return o.cpu_time + M * o.copy_time + N


def index(o: Observation, M: float, N: float) -> float:
    """I for one platform (needs its rate)."""
    if o.rate is None:
        raise InputError(f"platform {o.platform!r} has no rate: I needs an observed rate")
    return o.rate * per_packet_time(o, M, N)


@dataclass(frozen=True)
class IndexRow:
    """One platform: I and the share of each term in its per-packet time (fractions)."""

    platform: str
    rate: float
    index: float
    cpu_share: float
    memmove_share: float
    fixed_share: float


@dataclass(frozen=True)
class IndexTable:
    """I per platform for given M and N, with how much I varies across platforms.

    log_sd:     standard deviation of ln I (≈ coefficient of variation when small).
    max_ratio:  max I / min I (1.0 means every platform has the same index).
    """

    M: float
    N: float
    rows: tuple[IndexRow, ...]
    log_sd: float
    max_ratio: float

    def to_json(self) -> dict[str, Any]:
        return {
            "M": self.M,
            "N_seconds": self.N,
            "log_sd": self.log_sd,
            "max_ratio": self.max_ratio,
            "platforms": [r.__dict__ for r in self.rows],
        }


def index_table(observations: list[Observation], M: float, N: float) -> IndexTable:
    check(observations)
    if not (math.isfinite(M) and M >= 0) or not (math.isfinite(N) and N >= 0):
        raise InputError(f"M and N must be finite and ≥ 0 (got M={M}, N={N})")
    rows = []
    for o in observations:
        t = per_packet_time(o, M, N)
        rows.append(
            IndexRow(
                o.platform,
                float(o.known_rate),
                o.known_rate * t,
                o.cpu_time / t,
                M * o.copy_time / t,
                N / t,
            )
        )
    logs = np.log([r.index for r in rows])
    sd = float(np.std(logs, ddof=1)) if len(rows) > 1 else math.nan
    return IndexTable(M, N, tuple(rows), sd, float(np.exp(logs.max() - logs.min())))
