"""Bandwidth units for the memmove term: everything is converted to bytes per second."""

from __future__ import annotations

from perflab.errors import InputError

_BYTES = {
    "": 1.0,
    "k": 1e3,
    "m": 1e6,
    "g": 1e9,
    "t": 1e12,
    "ki": 2.0**10,
    "mi": 2.0**20,
    "gi": 2.0**30,
    "ti": 2.0**40,
}

#: Accepted spellings, for help texts.
BANDWIDTH_UNITS = (
    "B/s",
    "kB/s",
    "MB/s",
    "GB/s",
    "KiB/s",
    "MiB/s",
    "GiB/s",
    "bit/s",
    "kbit/s",
    "Mbit/s",
    "Gbit/s",
    "Gb/s",
    "Gibit/s",
)


def bytes_per_second(unit: str) -> float:
    """How many bytes/s one ``unit`` is: 'MiB/s' → 1048576, 'Gbit/s' → 1.25e8.

    Bytes are 'B' (decimal prefixes k/M/G/T, binary Ki/Mi/Gi/Ti); bits are 'bit' or a
    lower-case 'b' ('Gb/s'). The router performance-index experiment writes C in Gbit/s (1.9
    Gbit/s for 248 MiB/s).
    """
    text = unit.strip()
    if not text.endswith("/s"):
        raise InputError(
            f"bandwidth unit {unit!r} must be per second (e.g. {', '.join(BANDWIDTH_UNITS[:7])})"
        )
    body = text[:-2]
    if body.endswith(("bit", "bps")):
        prefix, bits = body[:-3], True
    elif body.endswith("b"):
        prefix, bits = body[:-1], True
    elif body.endswith("B"):
        prefix, bits = body[:-1], False
    else:
        raise InputError(
            f"bandwidth unit {unit!r}: end with B/s (bytes) or bit/s (bits), e.g. MiB/s or Gbit/s"
        )
    key = prefix.lower()
    if key not in _BYTES:
        raise InputError(
            f"bandwidth unit {unit!r}: unknown prefix {prefix!r} (use k, M, G, T or Ki, Mi, Gi, Ti)"
        )
    factor = _BYTES[key]
    return factor / 8.0 if bits else factor
