"""One platform's inputs to the model, and their validation (from any table-like rows)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from perflab.errors import InputError
from perflab.model.units import bytes_per_second


@dataclass(frozen=True)
class Observation:
    """One platform.

    cpu:        CPU score per core, in iterations per second (CoreMark or ``cpu_iter_per_sec``).
    memmove:    copy bandwidth C in bytes per second.
    length:     packet (or item) length L in bytes.
    rate:       observed throughput in packets (items) per second; None for a platform
                to predict.
    """

    platform: str
    cpu: float
    memmove: float
    length: float
    rate: float | None = None

    @property
    def cpu_time(self) -> float:
        """1/cpu, seconds per CPU-score iteration."""
        return 1.0 / self.cpu

    @property
    def copy_time(self) -> float:
        """L/C, seconds to copy one packet at the memmove bandwidth (M = 1)."""
        return self.length / self.memmove

    @property
    def known_rate(self) -> float:
        """``rate`` of a platform whose rate is measured (``check(..., need_rate=True)`` passed)."""
        assert self.rate is not None, f"platform {self.platform!r} has no rate"
        return self.rate


@dataclass(frozen=True)
class Columns:
    """Which column holds what, and the unit of the memmove column."""

    platform: str = "platform"
    cpu: str = "cpu"
    memmove: str = "memmove"
    length: str = "length"
    rate: str = "rate"
    memmove_unit: str = "MiB/s"


def from_rows(
    rows: Iterable[Mapping[str, object]],
    cols: Columns,
    *,
    need_rate: bool = True,
    source: str = "input",
) -> list[Observation]:
    """Observations from rows (e.g. ``csv.DictReader``); InputError names row and column."""
    factor = bytes_per_second(cols.memmove_unit)
    out: list[Observation] = []
    names = [cols.platform, cols.cpu, cols.memmove, cols.length] + (
        [cols.rate] if need_rate else []
    )
    for i, row in enumerate(rows, start=2):  # line 1 is the header
        missing = [c for c in names if c not in row]
        if missing:
            have = ", ".join(k for k in row if k is not None)
            raise InputError(
                f"no column {', '.join(repr(m) for m in missing)} (columns: {have})",
                location=source,
            )
        where = f"{source}:{i}"
        platform = str(row[cols.platform]).strip()
        if not platform:
            raise InputError(f"empty platform name in column {cols.platform!r}", location=where)
        rate = None
        if need_rate or str(row.get(cols.rate, "") or "").strip():
            rate = _positive(row.get(cols.rate), cols.rate, where)
        out.append(
            Observation(
                platform=platform,
                cpu=_positive(row[cols.cpu], cols.cpu, where),
                memmove=_positive(row[cols.memmove], cols.memmove, where) * factor,
                length=_positive(row[cols.length], cols.length, where),
                rate=rate,
            )
        )
    if not out:
        raise InputError("no rows", location=source)
    return out


def check(observations: list[Observation], *, need_rate: bool = True) -> None:
    """Every number finite and > 0, platform names unique; InputError otherwise."""
    seen: set[str] = set()
    for o in observations:
        if o.platform in seen:
            raise InputError(
                f"platform {o.platform!r} appears twice: give one row per platform "
                "(aggregate repeated runs first)"
            )
        seen.add(o.platform)
        fields: list[tuple[str, float | None]] = [
            ("cpu", o.cpu),
            ("memmove", o.memmove),
            ("length", o.length),
        ]
        if need_rate or o.rate is not None:
            fields.append(("rate", o.rate))
        for name, v in fields:
            if v is None or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise InputError(
                    f"platform {o.platform!r}: {name} must be a positive number, not {v!r}"
                )


def _positive(value: object, column: str, where: str) -> float:
    text = "" if value is None else str(value).strip()
    if not text:
        raise InputError(f"column {column!r} is empty", location=where)
    try:
        v = float(text)
    except ValueError:
        raise InputError(f"column {column!r}: {text!r} is not a number", location=where) from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(
            f"column {column!r}: {text} must be positive (a rate, score or size)", location=where
        )
    return v
