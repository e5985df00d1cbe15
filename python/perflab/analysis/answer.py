"""A question's answer, computed once: `answer(store, request)` → `Answer`, the one result
type that every door reads — `perflab compare` and `perflab report` render it, and
`perflab.open(...).compare(...)` returns it — so the numbers are the same to the last
digit whichever door a question comes in by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflab.analysis.request import ComparisonRequest
from perflab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from perflab.analysis.comparison_table import ComparedCell, ComparisonTable, Note
    from perflab.analysis.dataset import Dataset
    from perflab.analysis.experiment_pair import CrossDataset, RunOrigin
    from perflab.analysis.scaling import ScalingResult
    from perflab.observe.movers import Mover
    from perflab.stats.warnings import StatWarning
    from perflab.store import Database, ExperimentRow


def regressions(found: Answer, worse_than: float) -> list[Any]:
    """What is significantly worse by more than ``worse_than`` percent: compared cells of
    the comparison, or (group, fit) pairs of the scaling fits."""
    if found.fits is not None and found.table is None:
        from perflab.analysis.scaling import scaling_regressions

        return list(scaling_regressions(found.fits, worse_than))
    from perflab.analysis.comparison_table import regressions as worse

    return list(worse(found.comparison, worse_than))


#: `Answer.to_frame()`'s columns after the matrix parameters (``experiment`` first).
ROW_DTYPES = {
    "cell": "str",
    "variant": "str",
    "baseline": "str",
    "metric": "str",
    "unit": "str",
    "better": "str",
    "n_baseline": "int64",
    "n_variant": "int64",
    "baseline_location": "float64",
    "variant_location": "float64",
    "estimate": "float64",
    "low": "float64",
    "high": "float64",
    "p": "float64",
    "p_adjusted": "float64",
    "significant": "bool",
    "verdict": "str",
    "method": "str",
    "statistic": "str",
    "interval": "str",
    "scale": "str",
    "confidence": "float64",
    "correction": "str",
}


@dataclass(frozen=True, repr=False)
class Answer:
    """A request's answer: what every renderer draws from, and what the Python API returns.

    ``table``: the comparison (None for the scaling fits alone); ``fits``: the scaling
    fits; ``movers``: functions whose share of the profiles' samples changed; ``origins``:
    the stored experiments the compared runs come from, and how they map into the
    comparison; ``experiments``: those experiments' rows, baseline first; ``runs_view``:
    across, the comparison whose cells and variants the plots of runs draw.

    For code: ``rows`` (one `ComparedCell` per cell × metric × candidate), ``significant``,
    ``notes``, ``correction_statement`` and ``to_frame()``."""

    request: ComparisonRequest
    table: ComparisonTable | None
    fits: ScalingResult | None
    movers: tuple[Mover, ...]
    origins: list[RunOrigin]
    experiments: list[ExperimentRow]
    runs_view: ComparisonTable | None = None

    @property
    def comparison(self) -> ComparisonTable:
        """The comparison's table (a request with ``table``; InputError for the fits alone)."""
        if self.table is None:
            raise InputError("this answer holds scaling fits only: read .fits")
        return self.table

    @property
    def rows(self) -> list[ComparedCell]:
        """One `ComparedCell` per cell × metric × candidate (the TLDR table's cells)."""
        return list(self.comparison.comparisons)

    @property
    def significant(self) -> list[ComparedCell]:
        """The rows whose (corrected) interval excludes no change."""
        return [r for r in self.rows if r.significant]

    @property
    def notes(self) -> list[Note]:
        """The warnings (each with where it applies): the comparison's, else the fits'."""
        if self.table is not None:
            return list(self.table.notes)
        return list(self.fits.notes) if self.fits is not None else []

    @property
    def method(self) -> str:
        """The method asked for (``auto``: each comparison's own is in its row)."""
        return self.comparison.method

    @property
    def confidence(self) -> float:
        return self.comparison.confidence

    @property
    def correction(self) -> str:
        return self.comparison.correction

    @property
    def correction_statement(self) -> str:
        """What the multiple-comparison correction controlled (one sentence)."""
        return self.comparison.correction_statement

    def to_frame(self) -> pd.DataFrame:
        """One row per cell × metric × candidate: experiment, one column per matrix
        parameter (``param:NAME`` where a name is taken), then ``ROW_DTYPES``'s columns."""
        from perflab.analysis.frames import frame, param_columns

        t = self.comparison
        data = t.dataset
        names = param_columns(data.params, ["experiment", *ROW_DTYPES])
        dtypes = {"experiment": "int64", **{names[p]: "str" for p in data.params}, **ROW_DTYPES}
        cols: dict[str, list[Any]] = {name: [] for name in dtypes}
        for r in t.comparisons:
            k = r.comparison
            cols["experiment"].append(data.experiment.id)
            for p in data.params:
                cols[names[p]].append(r.labels.get(p))
            row = {
                "cell": r.cell_key,
                "variant": r.variant,
                "baseline": data.baseline,
                "metric": r.metric.name,
                "unit": r.metric.unit,
                "better": r.metric.better,
                "verdict": r.verdict.value,
                "method": k.method if k else t.method,
                "statistic": k.statistic if k else "",
                "interval": k.interval if k else "",
                "scale": k.scale if k else "",
                "confidence": k.confidence if k else t.confidence,
                "correction": k.correction if k else t.correction,
            }
            for name in ROW_DTYPES:
                cols[name].append(row[name] if name in row else getattr(r, name))
        return frame(cols, dtypes)

    def __repr__(self) -> str:
        if self.table is None:
            fits = self.fits
            groups = len(fits.groups) if fits is not None else 0
            return f"<perflab scaling fits: {groups} groups>"
        t, e = self.table, self.table.dataset.experiment
        return (
            f"<perflab comparison of experiment {e.id} ({e.name!r}): "
            f"{len(t.comparisons)} comparisons vs {t.dataset.baseline!r}, "
            f"{len(self.significant)} significant; "
            f"{t.method}, {t.confidence:.0%}, correction {t.correction}>"
        )


def answer(
    store: Database,
    request: ComparisonRequest,
    *,
    while_reading: Callable[[], object] | None = None,
) -> Answer:
    """Compute ``request`` over ``store``'s experiments (see `ComparisonRequest`).

    ``while_reading``: called while one experiment's values are read in a thread (the
    caller loads its renderer meanwhile: `perflab compare` of 80,000 runs saves ~0.1 s)."""
    if request.other is None and request.across is None and request.table:
        store.prefetch(store.experiment(request.experiment).id)
    if while_reading is not None:
        while_reading()
    if request.across is not None:
        return _across(store, request)
    opts = {**request.options.analysis_kwargs(), "metrics": request.metrics}
    if request.other is None:
        from perflab.analysis.against_baseline import compare_dataset
        from perflab.analysis.dataset import load_dataset
        from perflab.analysis.experiment_pair import single_origin

        data = _only_variants(load_dataset(store, request.experiment), request.variants)
        origins, experiments, notes = single_origin(data), [data.experiment], []
        result = compare_dataset(data, **opts) if request.table else None
    else:
        from perflab.analysis.experiment_pair import compare_cross

        cross = _cross(store, request)
        data, origins, experiments = cross.dataset, cross.origins, [cross.a, cross.b]
        notes = list(cross.notes)
        result = compare_cross(cross, **opts) if request.table else None
    fits = _fits(data, request, result, notes)
    movers: tuple[Mover, ...] = ()
    if request.movers and result is not None and request.other is None:
        from perflab.observe.movers import profile_movers

        found = profile_movers(store, data.experiment.id, data.baseline, result.confidence)
        movers = tuple(found or ())
    return Answer(request, result, fits, movers, origins, experiments)


def _cross(store: Database, request: ComparisonRequest) -> CrossDataset:
    from perflab.analysis.experiment_pair import cross_dataset

    assert request.other is not None
    pairs = [(v, v) if isinstance(v, str) else (v[0], v[1]) for v in request.variants]
    return cross_dataset(store, request.experiment, request.other, pairs or None)


def _fits(
    data: Dataset,
    request: ComparisonRequest,
    result: ComparisonTable | None,
    notes: list[StatWarning],
) -> ScalingResult | None:
    """The scaling fits of ``request`` (with the comparison: at its confidence and
    threshold; alone: at the options', the pairing's notes first)."""
    if request.scaling is None:
        return None
    from perflab.analysis.scaling import fit_dataset

    if result is not None:
        return fit_dataset(
            data, request.scaling, confidence=result.confidence, threshold=result.threshold
        )
    o = request.options
    if o.method not in ("auto", "welch") or o.method_options:
        raise InputError(
            "--scaling fits the per-size means by weighted least squares: --method, --interval, "
            "--statistic, --resamples and --scale do not apply to it"
        )
    fits = fit_dataset(data, request.scaling, confidence=o.confidence, threshold=o.threshold)
    if notes:
        from perflab.analysis.comparison_table import Note

        fits = dataclasses.replace(fits, notes=[Note(w) for w in notes] + fits.notes)
    return fits


def _across(store: Database, request: ComparisonRequest) -> Answer:
    from perflab.analysis.across import across_dataset, compare_across, run_view
    from perflab.analysis.dataset import load_dataset
    from perflab.analysis.experiment_pair import single_origin

    assert request.across is not None
    data = _only_variants(load_dataset(store, request.experiment), request.variants)
    cells = across_dataset(data, *request.across)
    compared = compare_across(cells, **request.options.analysis_kwargs(), metrics=request.metrics)
    return Answer(
        request,
        compared,
        None,
        (),
        single_origin(data),
        [data.experiment],
        runs_view=run_view(cells, compared),
    )


def _only_variants(data: Dataset, variants: Sequence[str | tuple[str, str]]) -> Dataset:
    """``data`` with only the named candidates (and its baseline)."""
    if not variants:
        return data
    wanted = []
    for v in variants:
        if not isinstance(v, str):
            raise InputError(
                "variant pairs (A, B) pair the variants of two experiments: give other=B"
            )
        if v not in data.variants:
            raise InputError(
                f"no variant '{v}' in experiment {data.experiment.id} "
                f"(variants: {', '.join(data.variants)})"
            )
        if v == data.baseline:
            raise InputError(f"'{v}' is the baseline: name the variants to compare with it")
        wanted.append(v)
    kept = [v for v in data.variants if v == data.baseline or v in wanted]
    return dataclasses.replace(data, variants=kept)
