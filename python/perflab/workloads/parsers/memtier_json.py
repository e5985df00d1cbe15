"""memtier_benchmark's ``--json-out-file`` document.

Layout read (``run_stats.cpp`` ``result_print_to_json``, memtier 1.2 – 2.x)::

    {"configuration": {...}, "run information": {...},
     "ALL STATS": {                      # or "AGGREGATED AVERAGE RESULTS (N runs)"
        "Runtime": {"Total duration": 20002, "Time unit": "MILLISECONDS", ...},
        "Sets": {...}, "Gets": {...}, "Waits": {...},
        "Totals": {"Count": 971014, "Ops/sec": 48550.71, "Hits/sec": ..., "Misses/sec": ...,
                   "Latency": 0.657, "Average Latency": 0.657, "Min Latency": ..., "Max Latency": ...,
                   "KB/sec": 1812.25, "KB/sec RX": ..., "KB/sec TX": ...,
                   "Time-Serie": {...},
                   "Percentile Latencies": {"p50.00": 0.487, "p99.00": 2.847, "p99.90": 5.567, ...}},
        "SET": [...], "GET": [...], "WAIT": [...]}}      # latency distribution, not read

memtier < 1.4 writes only Ops/sec, Hits/sec, Misses/sec, Latency and KB/sec per type.
Percentile keys are ``"p%.3f"`` cut to six characters (``p99.90``, ``p99.99``, ``p100.0``).
"""

from __future__ import annotations

from typing import Any

from perflab.workloads.parsers import memtier_blocks
from perflab.workloads.parsers.base import MetricDoc, ParseError, Parser, json_number
from perflab.workloads.parsers.embedded_json import find_object
from perflab.workloads.parsers.memtier_text import METRICS as TABLE_METRICS
from perflab.workloads.parsers.names import percentile_metric

NAME = "memtier_json"

_FIELDS = {
    "Count": "requests",
    "Ops/sec": "ops_per_sec",
    "Hits/sec": "hits_per_sec",
    "Misses/sec": "misses_per_sec",
    "MOVED/sec": "moved_per_sec",
    "ASK/sec": "ask_per_sec",
    "Connection Errors/sec": "connection_errors_per_sec",
    "Connection Errors": "connection_errors",
    "Min Latency": "min_latency_ms",
    "Max Latency": "max_latency_ms",
    "KB/sec": "kb_per_sec",
    "KB/sec RX": "kb_rx_per_sec",
    "KB/sec TX": "kb_tx_per_sec",
}
# "Average Latency" (memtier >= 1.4) and "Latency" (all versions) hold the same mean.
_AVERAGE_KEYS = ("Average Latency", "Latency")

METRICS = TABLE_METRICS + (
    MetricDoc("requests", "requests", "requests completed (JSON 'Count')"),
    MetricDoc("min_latency_ms", "ms", "fastest request"),
    MetricDoc("max_latency_ms", "ms", "slowest request"),
    MetricDoc("kb_rx_per_sec", "KiB/s", "bytes received per second / 1024"),
    MetricDoc("kb_tx_per_sec", "KiB/s", "bytes sent per second / 1024"),
    MetricDoc("connection_errors", "errors", "connection errors during the run"),
    MetricDoc("connection_errors_per_sec", "errors/s", "connection errors per second"),
    MetricDoc("duration_ms", "ms", "length of the run ('Runtime' 'Total duration')"),
)


def _value(raw: object, where: str) -> float | None:
    return json_number(raw, f"{NAME}: {where}", "a number")


def _type_metrics(obj: dict[str, Any], where: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for key, metric in _FIELDS.items():
        if key in obj and (v := _value(obj[key], f"{where} {key!r}")) is not None:
            found[metric] = v
    average = next((k for k in _AVERAGE_KEYS if k in obj), None)
    if average is not None and (v := _value(obj[average], f"{where} {average!r}")) is not None:
        found["avg_latency_ms"] = v
    percentiles = obj.get("Percentile Latencies", {})
    if not isinstance(percentiles, dict):
        raise ParseError(f"{NAME}: {where} 'Percentile Latencies': expected an object")
    for key, raw in percentiles.items():
        if key.startswith("p") and not isinstance(raw, dict):
            try:
                metric = percentile_metric(key[1:])
            except ArithmeticError:
                raise ParseError(f"{NAME}: {where}: bad percentile key {key!r}") from None
            if (v := _value(raw, f"{where} {key!r}")) is not None:
                found[metric] = v
    ran = found.get("requests", found.get("ops_per_sec", 0.0)) > 0
    if not ran:  # a type that never ran reports 0 latency, which is no measurement
        found = {m: v for m, v in found.items() if not m.endswith("_latency_ms")}
    return found


def _is_results(doc: dict[str, Any]) -> bool:
    return any(memtier_blocks.TITLE.match(k) for k in doc)


def find_document(text: str) -> dict[str, Any] | None:
    """memtier's JSON document in ``text`` (alone, or after other output), or None."""
    return find_object(text, _is_results, lenient=True)


def parse_document(doc: dict[str, Any]) -> dict[str, float]:
    chosen = memtier_blocks.choose(NAME, [k for k in doc if memtier_blocks.TITLE.match(k)])
    return parse_block(doc[chosen], chosen)


class MemtierJsonParser(Parser):
    name = NAME
    summary = "memtier_benchmark's --json-out-file document (ALL STATS, or AGGREGATED AVERAGE)"
    metrics = METRICS

    def parse(self, text: str) -> dict[str, float]:
        doc = find_document(text)
        if doc is None:
            raise ParseError(
                f"{NAME}: no JSON object with an 'ALL STATS' or 'AGGREGATED AVERAGE "
                "RESULTS' key found (expected memtier_benchmark's --json-out-file output)"
            )
        return parse_document(doc)


def parse_block(block: object, title: str) -> dict[str, float]:
    if not isinstance(block, dict):
        raise ParseError(f"{NAME}: {title!r}: expected an object")
    out: dict[str, float] = {}
    runtime = block.get("Runtime")
    if isinstance(runtime, dict) and "Total duration" in runtime:
        unit = str(runtime.get("Time unit", "MILLISECONDS")).upper()
        if (
            unit == "MILLISECONDS"
            and (v := _value(runtime["Total duration"], f"{title!r} Runtime")) is not None
        ):
            out["duration_ms"] = v
    types = {k: v for k, v in block.items() if isinstance(v, dict) and "Ops/sec" in v}
    if memtier_blocks.TOTALS not in types:
        raise ParseError(f"{NAME}: {title!r} has no 'Totals' object with 'Ops/sec'")
    for label, obj in types.items():
        prefix = memtier_blocks.prefix(label)
        out.update({prefix + m: v for m, v in _type_metrics(obj, f"{title!r} {label!r}").items()})
    return out
