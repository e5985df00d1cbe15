"""Frozen dataclass instances made without their ``__init__``, for the tables that make
thousands of them (a `compare` of 80,000 runs makes about 30,000 summaries, locations,
comparisons and cells). A frozen dataclass's ``__init__`` sets each field through
``object.__setattr__``: 4 µs for a `Summary`; these cost 1 µs. By hand: the dataclasses
module has no such constructor."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__


def made(cls: type[T], fields: dict[str, Any]) -> T:
    """``cls(**fields)`` for a frozen dataclass without ``__post_init__``; ``fields`` must
    name every field (the caller's dict becomes the instance's: do not reuse it)."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    return obj


def replaced(obj: T, **changes: Any) -> T:
    """``dataclasses.replace(obj, **changes)`` for a frozen dataclass whose ``changes``
    are known field names, and whose ``__post_init__`` (if any) the changed object
    satisfies already (it is not called)."""
    fields = dict(obj.__dict__)
    fields.update(changes)
    return made(type(obj), fields)
