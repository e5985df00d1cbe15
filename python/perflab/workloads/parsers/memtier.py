"""memtier_benchmark output of either kind, detected from the text itself."""

from __future__ import annotations

from perflab.workloads.parsers import memtier_json, memtier_text
from perflab.workloads.parsers.base import ParseError, Parser


class MemtierParser(Parser):
    """Reads the results table when the text has one, else a ``--json-out-file`` document.

    The table comes first because it is what memtier prints on stdout and its latencies
    have five decimals (the JSON's three); a text holding only JSON is read as JSON.
    """

    name = "memtier"
    summary = "memtier_benchmark output, table or JSON (detected)"
    metrics = memtier_json.METRICS

    def parse(self, text: str) -> dict[str, float]:
        if memtier_text.titles_in(text):
            return memtier_text.MemtierTextParser().parse(text)
        doc = memtier_json.find_document(text)
        if doc is not None:
            return memtier_json.parse_document(doc)
        raise ParseError(
            "memtier: neither memtier_benchmark's results table ('ALL STATS' "
            "followed by '=====' and a 'Type' header) nor its JSON document found"
        )
