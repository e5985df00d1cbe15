"""The cross-platform model's use cases (`perflab model`): platforms read from a CSV file
or from stored probe experiments, the performance index for given M and N, a fit of M, N
and each platform's index with their uncertainty, and a new platform's predicted rate.
The model itself is pure (`perflab.model`); reading its inputs is done here."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.model import FitResult, Observation


def observations_from_csv(
    path: str, columns: Mapping[str, str | None], *, length_bytes: float | None, need_rate: bool
) -> list[Observation]:
    """The platforms of a CSV file (``#`` lines are comments); ``columns``: the
    `perflab.model.Columns` names; ``length_bytes``: one packet length for every row
    instead of a column."""
    from perflab.model import Columns, from_rows

    given = {**columns, "length": "__length__"} if length_bytes is not None else dict(columns)
    cols = Columns(**given)  # type: ignore[arg-type]  # the names are Columns' fields
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows: list[dict[str, Any]] = list(
                csv.DictReader(line for line in f if not line.startswith("#"))
            )
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    if length_bytes is not None:
        if not (length_bytes > 0):
            raise InputError(f"--length-bytes must be positive, not {length_bytes}")
        rows = [{**r, "__length__": length_bytes} for r in rows]
    return from_rows(rows, cols, need_rate=need_rate, source=path)


def fit(
    obs: Sequence[Observation],
    *,
    M: float | None,
    N: float | None,
    bootstrap: int,
    confidence: float,
    seed: int,
) -> FitResult:
    """M, N and each platform's index fitted, with intervals at ``confidence``."""
    from perflab.model.fitting import fit as fit_model

    if bootstrap < 0:
        raise InputError(f"--bootstrap must be ≥ 0, not {bootstrap}")
    if not 0.5 < confidence < 1:
        raise InputError(f"--confidence must be between 0.5 and 1, e.g. 0.95 (got {confidence})")
    return fit_model(list(obs), M=M, N=N, bootstrap=bootstrap, confidence=confidence, seed=seed)
