"""Named parsers turning a command's output into flat metrics ``{name: float}``.

    >>> get_parser("hyperfine").parse(text)
    {'mean_s': 0.0123, 'stddev_s': 0.0004, ...}

Metric names carry their unit (``_ms``, ``_s``, ``_per_sec``). Each parser documents
what it produces in ``Parser.metrics``; a text without the expected output raises
`ParseError` (an `InputError`), with one line saying what was not found.
"""

from __future__ import annotations

import difflib

from perflab.errors import InputError
from perflab.workloads.parsers.base import MetricDoc, ParseError, Parser
from perflab.workloads.parsers.hyperfine import HyperfineParser
from perflab.workloads.parsers.memtier import MemtierParser
from perflab.workloads.parsers.memtier_json import MemtierJsonParser
from perflab.workloads.parsers.memtier_text import MemtierTextParser

_REGISTRY: dict[str, type[Parser]] = {
    cls.name: cls for cls in (MemtierParser, MemtierTextParser, MemtierJsonParser, HyperfineParser)
}


def available_parsers() -> list[str]:
    """Names accepted by `get_parser`, sorted."""
    return sorted(_REGISTRY)


def get_parser(name: str) -> Parser:
    """The parser registered as ``name``; `InputError` with a suggestion when there is none."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = (
            f"did you mean '{close[0]}'?"
            if close
            else f"known parsers: {', '.join(available_parsers())}"
        )
        raise InputError(f"unknown parser '{name}'", hint=hint) from None


__all__ = ["MetricDoc", "ParseError", "Parser", "available_parsers", "get_parser"]
