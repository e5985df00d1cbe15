"""Durations in experiment files and load settings: "20s", "500ms", "1m30s", "2h", or a
plain number of seconds."""

from __future__ import annotations

import math
import re

#: The longest duration a spec may give (30 days): beyond it, timers overflow.
MAX_SECONDS = 30 * 24 * 3600.0

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
}
_BARE = re.compile(r"\d+(?:\.\d+)?")
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|min|s|m|h)")


def parse_duration(value: object, *, zero: bool = False) -> float:
    """Seconds (float > 0; ≥ 0 with ``zero``) from a duration string or number; ValueError
    with a hint otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"bad duration {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and _BARE.fullmatch(value.strip()):
        seconds = float(value)  # a bare number is seconds, as memtier's --test-time 20
    elif isinstance(value, str):
        text = value.strip().lower()
        pos, seconds = 0, 0.0
        for m in _PART.finditer(text):
            if text[pos : m.start()].strip():
                break
            seconds += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos == 0 or text[pos:].strip():
            raise ValueError(f'bad duration {value!r} (use e.g. "30s", "500ms", "2m", "1h30m")')
    else:
        raise ValueError(f"bad duration {value!r}")
    if not (seconds > 0 or (zero and seconds == 0)):
        raise ValueError(f"duration must be {'0 or more' if zero else 'positive'}, got {value!r}")
    if not (math.isfinite(seconds) and seconds <= MAX_SECONDS):
        raise ValueError(f"duration {value!r} is longer than the limit of 30 days")
    return seconds


def format_duration(seconds: float) -> str:
    """Short human form: 850 ms, 12.3 s, 4 min 05 s, 1 h 02 min."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        m, s = divmod(round(seconds), 60)
        return f"{m} min {s:02d} s"
    h, rem = divmod(round(seconds), 3600)
    return f"{h} h {rem // 60:02d} min"
