"""Which of memtier_benchmark's result blocks to read, shared by its text and JSON parsers.

memtier prints one block titled ``ALL STATS`` for a single run; with ``--run-count N``
(N > 1) it prints ``BEST RUN RESULTS``, ``WORST RUN RESULTS`` and ``AGGREGATED AVERAGE
RESULTS (N runs)`` (plus ``RUN #k RESULTS`` with ``--print-all-runs``). The average is
the figure that describes the whole invocation, so it wins; a single run's block next.
"""

from __future__ import annotations

import re

from perflab.workloads.parsers.base import ParseError

AGGREGATED = re.compile(r"^AGGREGATED AVERAGE RESULTS \(\d+ runs?\)$")
ALL_STATS = "ALL STATS"
TITLE = re.compile(
    r"^(ALL STATS|AGGREGATED AVERAGE RESULTS \(\d+ runs?\)|BEST RUN RESULTS|"
    r"WORST RUN RESULTS|RUN #\d+ RESULTS)$"
)

#: The type label memtier gives the row/object summing all commands.
TOTALS = "Totals"


def choose(parser: str, titles: list[str]) -> str:
    """The title to read among ``titles`` (in output order); the last one of its kind wins."""
    for wanted in (AGGREGATED.match, lambda t: t == ALL_STATS):
        matching = [t for t in titles if wanted(t)]
        if matching:
            return matching[-1]
    if titles:
        raise ParseError(
            f"{parser}: found only {', '.join(repr(t) for t in titles)}; expected an "
            "'AGGREGATED AVERAGE RESULTS' block after them (output cut short?)"
        )
    raise ParseError(
        f"{parser}: no memtier_benchmark results found (expected an 'ALL STATS' or "
        "'AGGREGATED AVERAGE RESULTS' block)"
    )


def prefix(type_label: str) -> str:
    """Metric-name prefix of a row: ``Totals`` → no prefix, ``Gets`` → ``gets_``."""
    if type_label == TOTALS:
        return ""
    return re.sub(r"[^a-z0-9]+", "_", type_label.lower()).strip("_") + "_"
