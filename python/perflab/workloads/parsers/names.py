"""How labels printed by tools become metric names (lower case, unit suffix, ``_``)."""

from __future__ import annotations

import re
from decimal import Decimal


def percentile_metric(percentile: float | str) -> str:
    """``99.9`` → ``p999_latency_ms``; ``50`` → ``p50_latency_ms``; ``99.990`` → ``p9999_latency_ms``.

    The percentile is normalised first (trailing zeros dropped), then its dot removed, so
    that memtier's table label ``p99.9`` and its JSON key ``p99.90`` name the same metric.
    """
    value = Decimal(str(percentile)).normalize()
    digits = format(value, "f")
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return "p" + digits.replace(".", "") + "_latency_ms"


def slug(label: str) -> str:
    """A label as a metric-name fragment: ``"Slow one"`` → ``slow_one``, ``"MOVED/sec"`` → ``moved_per_sec``."""
    text = label.strip().lower().replace("/sec", "_per_sec").replace("/s", "_per_sec")
    text = re.sub(r"[^a-z0-9]+", "_", text)
    return text.strip("_")
