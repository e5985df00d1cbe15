"""The order of a series of versions (`perflab history`): experiments grouped by the
version they measured, and the versions in their natural order.

Natural order compares version strings piece by piece, numbers as numbers: v1.9 < v1.10 <
v2.0; 2024-05-01 < 2024-11-30; 6.1.0 < 6.1.12. As in semantic versioning and Debian, a
pre-release comes before its release (1.0-alpha < 1.0-beta2 < 1.0-rc1 < 1.0), while any
other suffix comes after it (6.1.0 < 6.1.0-13-amd64). `git describe`
output sorts after its tag by the number of commits since it: v1.4 < v1.4-3-gabc1234 <
v1.4-12-g0123abc < v1.5; its ``-dirty`` mark only breaks ties. A leading ``v`` is ignored.

Experiments of the same version are one point of the series (their runs pooled).
Experiments without a version come after the versioned ones, by creation time, each a
point of its own (``#ID``); a series of bare commit ids (which have no order of their own)
is ordered by creation time. Both are said in a warning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.records import ExperimentRow
from perflab.stats.warnings import StatWarning

#: Words that mark a pre-release, in order: it sorts before the release it leads to.
PRE_RELEASE = {
    "dev": 0,
    "alpha": 1,
    "a": 1,
    "beta": 2,
    "b": 2,
    "pre": 3,
    "preview": 3,
    "rc": 4,
    "c": 4,
}
_TOKEN = re.compile(r"\d+|[A-Za-z]+")
_DESCRIBE = re.compile(r"^(?P<base>.+?)-(?P<ahead>\d+)-g(?P<sha>[0-9a-f]{4,40})(?P<dirty>-dirty)?$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}(-dirty)?$")

#: A key element: (kind, number, word). Kinds order a pre-release word < the end of the
#: version < a number < any other word.
_PRE, _END, _NUMBER, _WORD = 0, 1, 2, 3
_Key = tuple[tuple[int, int, str], ...]


def version_key(text: str) -> tuple[_Key, int, str]:
    """A sort key of a version string in natural order (see the module's docstring)."""
    s = text.strip()
    ahead, tie = 0, s
    m = _DESCRIBE.match(s)
    if m:  # git describe: the tag, then how many commits after it
        s, ahead = m.group("base"), int(m.group("ahead"))
    s = re.sub(r"^[vV](?=\d)", "", s)
    parts: list[tuple[int, int, str]] = []
    for token in _TOKEN.findall(s):
        if token.isdigit():
            parts.append((_NUMBER, int(token), ""))
        else:
            word = token.lower()
            rank = PRE_RELEASE.get(word)
            parts.append((_PRE, rank, word) if rank is not None else (_WORD, 0, word))
    parts.append((_END, 0, ""))
    return tuple(parts), ahead, tie


def is_commit_id(text: str) -> bool:
    """A bare commit id (7 to 40 hex digits, at least one a–f): no order of its own."""
    return bool(_COMMIT.match(text)) and not text.split("-")[0].isdigit()


@dataclass(frozen=True)
class Version:
    """One point of a series: the experiments that measured one version.

    label:       what tables and plots call it: the version, or ``#ID`` for an experiment
                 without one.
    version:     the version string as stored (None for ``#ID``).
    experiments: the ids of its experiments, oldest first (their runs are pooled).
    commit/repo: the source it was built from, as its newest experiment recorded it
                 (None when not recorded).
    created_at:  when its first experiment was created (Unix seconds).
    """

    label: str
    version: str | None
    experiments: tuple[int, ...]
    commit: str | None
    repo: str | None
    created_at: float


def order_versions(rows: Sequence[ExperimentRow]) -> tuple[list[Version], list[StatWarning]]:
    """The versions of these experiments in series order, and what was assumed doing so."""
    by_version: dict[str, list[ExperimentRow]] = {}
    loose: list[ExperimentRow] = []
    for e in sorted(rows, key=lambda e: (e.created_at, e.id)):
        if e.version:
            by_version.setdefault(e.version, []).append(e)
        else:
            loose.append(e)
    warnings = []
    named = [_point(v, es) for v, es in by_version.items()]
    if named and all(is_commit_id(v.label) for v in named):
        named.sort(key=lambda v: (v.created_at, v.experiments))
        warnings.append(
            StatWarning(
                "commit_versions",
                "the versions are commit ids, which have no order of their own: they are "
                "ordered by when they were measured (give versions that sort, such as "
                "`git describe` output or a date)",
                {"versions": len(named)},
            )
        )
    else:
        named.sort(key=lambda v: version_key(v.label))
    if loose:
        ids = tuple(e.id for e in loose)
        where = "after the versioned ones, " if named else ""
        warnings.append(
            StatWarning(
                "no_version",
                f"{_count(len(loose), 'experiment')} without a version "
                f"({', '.join(f'#{i}' for i in ids)}): ordered {where}by creation time "
                "(give each its version: perflab run --version V, or import --version V)",
                {"experiments": ids},
            )
        )
    return named + [_point(None, [e]) for e in loose], warnings


def _point(version: str | None, experiments: list[ExperimentRow]) -> Version:
    newest = experiments[-1]
    return Version(
        label=version if version is not None else f"#{newest.id}",
        version=version,
        experiments=tuple(e.id for e in experiments),
        commit=next((e.source_commit for e in reversed(experiments) if e.source_commit), None),
        repo=next((e.source_repo for e in reversed(experiments) if e.source_repo), None),
        created_at=experiments[0].created_at,
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
