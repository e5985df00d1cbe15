"""The warnings of a comparison for a person at a terminal: one line per kind (a warning's
`code`) with a count, where it applies, and what to do — and every warning in full, one
line each (`full_lines`: `perflab compare --verbose`, `perflab show ID --warnings`).

Presentation only: the warnings themselves (`analysis.comparison_table.Note` of a
`stats.warnings.StatWarning`) are computed once, in analysis; this module only groups
and words them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.analysis.comparison_table import Note

if TYPE_CHECKING:
    from rich.console import Console

#: What a kind of warning is called in its group's line (otherwise: its code in words).
KIND_NAMES = {
    "outliers": "outlying runs",
    "too_few_runs": "too few runs",
    "slow_first_run": "a slow first run",
    "drift": "drift across runs",
    "bimodal": "two modes in the runs",
    "ties": "tied values",
    "unequal_variances": "unequal variances",
    "absolute_change": "a change in the metric's unit (baseline near zero)",
    "ratio_unbounded": "an unbounded ratio interval",
    "interval_replaced": "another interval shown",
    "baseline_uncertainty": "an uncertain baseline",
    "sweep_heterogeneous": "cells that differ under a geometric mean",
    "sweep_cells_left_out": "cells left out of the geometric mean",
    "sweep_not_computed": "no geometric mean",
    "odd_device": "a board apart from the others",
}

#: How many places a group's line names before "…".
PLACES_SHOWN = 2
#: A kind with at most this many warnings is said in full, one line each.
FULL_UP_TO = 2


@dataclass(frozen=True)
class WarningGroup:
    """The warnings of one kind: ``notes`` in the order the comparison gave them."""

    code: str
    notes: tuple[Note, ...]

    @property
    def count(self) -> int:
        return len(self.notes)


def reading(notes: list[Note]) -> list[Note]:
    """The warnings that change how a table must be read (`stats.warnings.READING`), worst
    first (`stats.warnings.reading_rank`; the comparison's order within a rank)."""
    from perflab.stats.warnings import READING, reading_rank

    mine = [n for n in notes if n.warning.kind == READING]
    return sorted(mine, key=lambda n: reading_rank(n.warning.code))


def where(note: Note) -> str:
    """Where a warning applies: ``clients=1 · baseline · ops_per_sec`` ('' for the whole
    experiment)."""
    cell = note.cell_key if note.cell_key not in ("", "-") else ""
    return " · ".join(x for x in (cell, note.variant, note.metric) if x)


def full_line(note: Note) -> str:
    """One warning in full: ``where: message`` (the message alone for the experiment)."""
    place = where(note)
    return f"{place}: {note.warning.message}" if place else note.warning.message


def full_lines(notes: list[Note]) -> list[str]:
    """Every warning in full, one line each, in order; the same line is said once."""
    return list(dict.fromkeys(full_line(n) for n in notes))


def group_notes(notes: list[Note]) -> list[WarningGroup]:
    """The warnings by kind (code), kinds in order of their first warning."""
    groups: dict[str, list[Note]] = {}
    for n in notes:
        groups.setdefault(n.warning.code, []).append(n)
    return [WarningGroup(code, tuple(ns)) for code, ns in groups.items()]


def _common_advice(messages: list[str]) -> str:
    """What the messages of one kind say to do alike: their longest common ending, from a
    clause start ("; " or ": "), when it says something ('' otherwise)."""
    first = messages[0]
    n = len(first)
    for m in messages[1:]:
        k = 0
        while k < min(n, len(m)) and first[-1 - k] == m[-1 - k]:
            k += 1
        n = k
    tail = first[len(first) - n :] if n else ""
    for cut in re.finditer(r"[;:] ", tail):
        advice = tail[cut.end() :].strip()
        if advice.count("(") == advice.count(")") and advice.count("`") % 2 == 0:
            return advice if len(advice.split()) >= 3 else ""
    return ""


def group_line(group: WarningGroup) -> str:
    """One line for a kind: its only warning in full, or ``outlying runs × 24 (A; B; …):
    they are kept: look at their logs …`` — the count, the first places, the shared advice."""
    if group.count == 1:
        return full_line(group.notes[0])
    messages = list(dict.fromkeys(n.warning.message for n in group.notes))
    places = list(dict.fromkeys(p for p in (where(n) for n in group.notes) if p))
    shown = "; ".join(places[:PLACES_SHOWN]) + ("; …" if len(places) > PLACES_SHOWN else "")
    if len(messages) == 1 and len(places) <= PLACES_SHOWN:
        return f"{shown}: {messages[0]}" if shown else messages[0]
    kind = KIND_NAMES.get(group.code, group.code.replace("_", " "))
    head = f"{kind} × {group.count}" + (f" ({shown})" if shown else "")
    advice = messages[0] if len(messages) == 1 else _common_advice(messages)
    return f"{head}: {advice}" if advice else head


def grouped_lines(notes: list[Note], more: str, total: int | None = None) -> list[str]:
    """One line per kind of warning (`group_line`); when any line leaves a warning out,
    a last line: ``more`` (how to see every one in full), with the ``total`` (default:
    of ``notes``; more when ``notes`` are a part of them)."""
    groups = group_notes(notes)
    lines: list[str] = []
    for g in groups:
        small = len({full_line(n) for n in g.notes}) <= FULL_UP_TO
        lines += full_lines(list(g.notes)) if small else [group_line(g)]
    complete = all(
        len({full_line(n) for n in g.notes}) <= FULL_UP_TO or _says_all(g) for g in groups
    )
    if not complete:
        count = len(full_lines(notes)) if total is None else total
        lines.append(f"{count} warnings in all, each in full: {more}")
    return lines


def _says_all(group: WarningGroup) -> bool:
    """Whether `group_line` says every warning of ``group`` (one message, few places)."""
    messages = {n.warning.message for n in group.notes}
    places = {where(n) for n in group.notes if where(n)}
    return len(messages) == 1 and len(places) <= PLACES_SHOWN


def print_warnings(console: Console, notes: list[Note]) -> None:
    """Every warning in full (`full_lines`), ``warning: `` before each, wrapped at words
    to the console's width; ``no warnings`` when there are none."""
    from rich.text import Text

    from perflab.report.safe_text import safe_text

    lines = full_lines(notes)
    for line in lines:
        console.print(Text("warning: ", style="yellow") + safe_text(line))
    if not lines:
        console.print("no warnings")
