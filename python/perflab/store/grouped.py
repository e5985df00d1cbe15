"""An experiment's measured values (or their blocks) by (cell, variant, metric), as the
store's Rust reader hands them over: one buffer of numbers and each group's range in it.

A group is read as a list when it is first asked for, so that the reader — in a thread,
while the statistics import — makes no Python object per value (160,000 for an
80,000-run experiment, made while holding the GIL), and `Dataset.arrays` takes the numbers
as arrays straight from the buffer (its `data` and `offsets`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

#: A group's key: (cell_key, variant, metric).
Key = tuple[str, str, str]


class Grouped(Mapping[Key, list[Any]]):
    """``keys[g]`` → the numbers ``[offsets[g], offsets[g + 1])`` of ``data`` (native byte
    order; ``typecode`` "d": float64 values, "q": int64 blocks), as a list made once."""

    def __init__(
        self, keys: list[Key], offsets: bytes, data: bytes, typecode: Literal["d", "q"]
    ) -> None:
        self.keys_in_order = keys
        self.offsets = offsets
        self.data = data
        self._bounds = memoryview(offsets).cast("Q")
        self._numbers: memoryview[Any] = memoryview(data).cast(typecode)
        self._index: dict[Key, int] | None = None
        self._lists: dict[Key, list[Any]] = {}

    def _at(self, key: Key) -> int:
        if self._index is None:
            self._index = {k: g for g, k in enumerate(self.keys_in_order)}
        return self._index[key]

    def __getitem__(self, key: Key) -> list[Any]:
        found = self._lists.get(key)
        if found is None:
            g = self._at(key)
            found = self._lists[key] = self._numbers[self._bounds[g] : self._bounds[g + 1]].tolist()
        return found

    def __contains__(self, key: object) -> bool:
        try:
            self._at(key)  # type: ignore[arg-type]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[Key]:
        return iter(self.keys_in_order)

    def __len__(self) -> int:
        return len(self.keys_in_order)

    def __repr__(self) -> str:
        return f"Grouped({len(self)} groups, {len(self._numbers)} numbers)"
