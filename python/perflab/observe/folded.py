"""Folded stacks ("comm;outer;…;leaf COUNT" lines, as inferno's collapse-perf writes them):
parsed, merged over runs, stored compressed, and turned into each function's share of the
samples — self (the function is the leaf) and total (the function is anywhere on the
stack, counted once per stack)."""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Stacks = dict[str, int]  # "comm;f1;…;leaf" → samples


def parse_folded(text: str) -> Stacks:
    """Folded lines → stack → samples (repeated stacks added; malformed lines left out)."""
    out: Stacks = {}
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        out[stack] = out.get(stack, 0) + int(count)
    return out


def format_folded(stacks: Mapping[str, int]) -> str:
    """Stacks as folded lines, sorted (inferno's order), zero counts left out."""
    return "".join(f"{s} {n}\n" for s, n in sorted(stacks.items()) if n > 0)


def merge(profiles: Iterable[Mapping[str, int]]) -> Stacks:
    """The sum of the counts of several profiles (a variant's runs, merged)."""
    out: Stacks = {}
    for p in profiles:
        for stack, n in p.items():
            out[stack] = out.get(stack, 0) + n
    return out


def compress(folded: str) -> bytes:
    """Folded text as stored (gzip, reproducible: no timestamp): `perflab show ID
    --artifact profile:PHASE | gunzip` gives it back."""
    return gzip.compress(folded.encode(), compresslevel=6, mtime=0)


def decompress(blob: bytes) -> str:
    return gzip.decompress(blob).decode("utf-8", "replace")


@dataclass(frozen=True)
class Shares:
    """Each function's share of one profile's samples, as fractions (0.38 = 38%)."""

    samples: int
    self_share: dict[str, float]
    total_share: dict[str, float]


def shares(stacks: Mapping[str, int]) -> Shares:
    """Self and total shares of every function of a profile. The root frame (the process
    name, ``comm``) is left out: it is not a function."""
    total = sum(stacks.values())
    own: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    for stack, n in stacks.items():
        frames = stack.split(";")[1:]
        if not frames or n <= 0:
            continue
        own[frames[-1]] = own.get(frames[-1], 0) + n
        for f in set(frames):
            anywhere[f] = anywhere.get(f, 0) + n
    if total <= 0:
        return Shares(0, {}, {})
    return Shares(
        total,
        {f: n / total for f, n in own.items()},
        {f: n / total for f, n in anywhere.items()},
    )
