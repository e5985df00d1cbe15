"""memtier_benchmark's results table (what it prints to stdout).

The layout this reads (``run_stats.cpp``, memtier 1.2 – 2.x)::

    ALL STATS
    ============================================================================
    Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency ...  KB/sec
    ----------------------------------------------------------------------------
    Sets            0.00          ---          ---             ---             --- ...    0.00
    Gets        48550.71     48102.33       448.38         0.65687         0.48700 ... 1812.25
    Waits           0.00          ---          ---             ---             --- ...     ---
    Totals      48550.71     48102.33       448.38         0.65687         0.48700 ... 1812.25

Column titles contain spaces (``Avg. Latency``, ``p99.9 Latency``), so the header is
split by known title shapes; every other title is one word. Versions before 1.4 print
``Latency`` (the average) and no percentile columns. Rows are whitespace separated;
``---`` means "not applicable" and yields no metric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflab.workloads.parsers import memtier_blocks
from perflab.workloads.parsers.base import MetricDoc, ParseError, Parser
from perflab.workloads.parsers.names import percentile_metric, slug

NAME = "memtier_text"

_HEADER_TOKEN = re.compile(r"Avg\. Latency|p\d+(?:\.\d+)? Latency|\S+")
_PERCENTILE_TITLE = re.compile(r"^p(\d+(?:\.\d+)?) Latency$")
_FIXED_TITLES = {
    "Ops/sec": "ops_per_sec",
    "Hits/sec": "hits_per_sec",
    "Misses/sec": "misses_per_sec",
    "MOVED/sec": "moved_per_sec",
    "ASK/sec": "ask_per_sec",
    "Avg. Latency": "avg_latency_ms",
    "Latency": "avg_latency_ms",  # memtier < 1.4: the average latency, in ms
    "KB/sec": "kb_per_sec",
}
_NOT_APPLICABLE = "---"

METRICS = (
    MetricDoc("ops_per_sec", "requests/s", "all requests per second (Totals row)"),
    MetricDoc("hits_per_sec", "hits/s", "GET hits per second"),
    MetricDoc("misses_per_sec", "misses/s", "GET misses per second"),
    MetricDoc("avg_latency_ms", "ms", "mean request latency"),
    MetricDoc(
        "p<N>_latency_ms",
        "ms",
        "latency percentile N with the dot removed, as printed: "
        "p50_latency_ms, p99_latency_ms, p999_latency_ms (99.9), p9999_latency_ms (99.99)",
    ),
    MetricDoc("kb_per_sec", "KiB/s", "bytes sent and received per second / 1024"),
    MetricDoc("moved_per_sec", "replies/s", "cluster MOVED redirections per second (cluster mode)"),
    MetricDoc("ask_per_sec", "replies/s", "cluster ASK redirections per second (cluster mode)"),
    MetricDoc(
        "<type>_<metric>",
        "as above",
        "the same per request type row: sets_, gets_, waits_, "
        "or an arbitrary command's row such as hsets_ (e.g. gets_ops_per_sec, "
        "gets_hits_per_sec, sets_p99_latency_ms); latency metrics only for rows with requests",
    ),
)


def column_metric(title: str) -> str:
    """Metric suffix for a column title of the table."""
    if title in _FIXED_TITLES:
        return _FIXED_TITLES[title]
    percentile = _PERCENTILE_TITLE.match(title)
    if percentile:
        return percentile_metric(percentile.group(1))
    return slug(title)


def _is_latency(metric: str) -> bool:
    return metric.endswith("_latency_ms")


@dataclass(frozen=True)
class _Table:
    title: str  # "ALL STATS", "AGGREGATED AVERAGE RESULTS (3 runs)", ...
    header: str  # the "Type  Ops/sec ..." line
    rows: list[str]  # one line per request type, "Totals" last


def _tables(text: str) -> list[_Table]:
    """Every results table in ``text``, in order. Progress lines end in ``\\r``; treat as lines."""
    lines = [line.rstrip() for line in text.replace("\r", "\n").split("\n")]
    tables: list[_Table] = []
    i = 0
    while i < len(lines):
        title = lines[i].strip()
        if (
            memtier_blocks.TITLE.match(title)
            and i + 3 < len(lines)
            and set(lines[i + 1]) == {"="}
            and lines[i + 2].startswith("Type")
            and set(lines[i + 3]) == {"-"}
        ):
            rows = []
            j = i + 4
            while j < len(lines) and lines[j].strip():
                rows.append(lines[j])
                j += 1
            tables.append(_Table(title, lines[i + 2], rows))
            i = j
        else:
            i += 1
    return tables


def _number(token: str, where: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ParseError(f"{NAME}: {where}: expected a number or '---', found {token!r}") from None


def parse_table(table: _Table) -> dict[str, float]:
    titles = _HEADER_TOKEN.findall(table.header[len("Type") :])
    metrics_of_columns = [column_metric(t) for t in titles]
    if "ops_per_sec" not in metrics_of_columns:
        raise ParseError(
            f"{NAME}: table {table.title!r} has no 'Ops/sec' column "
            f"(header: {table.header.strip()!r})"
        )
    out: dict[str, float] = {}
    saw_totals = False
    for row in table.rows:
        tokens = row.split()
        label, values = tokens[0], tokens[1:]
        where = f"table {table.title!r}, row {label!r}"
        if len(values) != len(titles):
            raise ParseError(
                f"{NAME}: {where}: {len(values)} values for {len(titles)} columns "
                f"({', '.join(titles)})"
            )
        parsed = {
            m: _number(v, where) for m, v in zip(metrics_of_columns, values) if v != _NOT_APPLICABLE
        }
        if parsed.get("ops_per_sec", 0.0) == 0.0:
            # memtier < 1.4 prints 0.00000 latency for a request type that never ran.
            parsed = {m: v for m, v in parsed.items() if not _is_latency(m)}
        prefix = memtier_blocks.prefix(label)
        saw_totals |= label == memtier_blocks.TOTALS
        out.update({prefix + m: v for m, v in parsed.items()})
    if not saw_totals:
        raise ParseError(f"{NAME}: table {table.title!r} has no 'Totals' row")
    return out


def titles_in(text: str) -> list[str]:
    return [t.title for t in _tables(text)]


class MemtierTextParser(Parser):
    name = NAME
    summary = "memtier_benchmark's results table on stdout (ALL STATS, or AGGREGATED AVERAGE with --run-count)"
    metrics = METRICS

    def parse(self, text: str) -> dict[str, float]:
        tables = _tables(text)
        chosen = memtier_blocks.choose(NAME, [t.title for t in tables])
        table = [t for t in tables if t.title == chosen][-1]
        return parse_table(table)
