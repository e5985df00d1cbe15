"""Names in an experiment file: unique within their table; an unknown one gets a hint."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec


def unique_names(spec: Spec, table: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            raise spec.error((table, i, "name"), f"duplicate {table} name '{n}'")
        seen.add(n)


def choices_hint(value: str, names: Iterable[str]) -> str:
    names = list(names)
    close = difflib.get_close_matches(value, names, n=1)
    return f"did you mean '{close[0]}'?" if close else "choose from: " + ", ".join(names)
