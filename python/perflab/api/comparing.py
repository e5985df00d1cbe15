"""The one path from a question about stored experiments to its answer.

A `ComparisonRequest` says what to compare — one experiment's variants with its baseline,
experiment B against experiment A, every cell against a reference cell (``across``), or
cost against a numeric parameter (``scaling``) — and how (the statistics options);
`answer` computes it once and returns everything a renderer draws from it (`Answer`):
the comparison, the scaling fits, the profile movers, where the runs came from. `perflab
compare`, `perflab report` and `perflab.open(...).compare(...)` all call it, so the
numbers are the same to the last digit whichever door a question comes in by.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.analysis.compare import CompareResult
    from perflab.analysis.dataset import Dataset
    from perflab.analysis.experiment_pair import CrossDataset, RunOrigin
    from perflab.analysis.scaling import ScalingOptions as ScalingOptions
    from perflab.analysis.scaling import ScalingResult
    from perflab.observe.movers import Mover
    from perflab.stats.warnings import StatWarning
    from perflab.store import Database, ExperimentRow


#: The choices of the options argparse restricts for the command.
INTERVALS = ("auto", "difference", "fieller")
SCALES = ("auto", "ratio", "shift")
#: A method's own option names that method (`--interval fieller` alone means Welch).
OPTION_OWNER = {
    "interval": "welch",
    "statistic": "bootstrap",
    "resamples": "bootstrap",
    "scale": "mannwhitney",
}


@dataclass(frozen=True)
class CompareOptions:
    """How to compare: `perflab compare`'s statistics options, checked."""

    method: str = "auto"
    method_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    confidence: float | None = None
    threshold: float = 0.0  # fraction
    correction: str = "holm"
    diagnostics: bool | None = None

    def analysis_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `compare_dataset` / `compare_cross`."""
        return {
            "method": self.method,
            "method_options": dict(self.method_options),
            "confidence": self.confidence,
            "threshold": self.threshold,
            "correction": self.correction,
            "diagnostics": self.diagnostics,
        }


class CompareKwargs(TypedDict, total=False):
    """`perflab compare`'s statistics options as keyword arguments, declared once: what
    `compare_options` and `perflab.api.lab.Store.compare` take (defaults: `compare_options`)."""

    method: str  # auto, welch, bootstrap, mannwhitney, paired
    confidence: float | None  # default: the experiment's, 0.95
    threshold: float | str  # a fraction (0.01) or a percentage as text ("1%")
    correction: str  # holm, bonferroni, bh, none
    interval: str | None  # Welch's: auto, difference, fieller
    statistic: str | None  # the bootstrap's
    resamples: int | None  # the bootstrap's
    scale: str | None  # Mann-Whitney's: auto, ratio, shift
    diagnostics: bool | None  # per-cell diagnostics (default: on for small tables)


def compare_options(**given: Unpack[CompareKwargs]) -> CompareOptions:
    """The options checked as the command checks them (InputError, one line, otherwise)."""
    method = given.get("method", "auto")
    confidence = given.get("confidence")
    interval, statistic = given.get("interval"), given.get("statistic")
    resamples, scale = given.get("resamples"), given.get("scale")
    if confidence is not None and not (
        isinstance(confidence, (int, float)) and 0.5 < confidence < 1
    ):
        raise InputError(f"confidence must be between 0.5 and 1, e.g. 0.95 (got {confidence!r})")
    if interval is not None and interval not in INTERVALS:
        raise InputError(f"interval {interval!r}: choose from {', '.join(INTERVALS)}")
    if scale is not None and scale not in SCALES:
        raise InputError(f"scale {scale!r}: choose from {', '.join(SCALES)}")
    from perflab.stats.bootstrap import MIN_RESAMPLES

    if resamples is not None and (
        isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < MIN_RESAMPLES
    ):
        raise InputError(f"resamples must be a whole number ≥ {MIN_RESAMPLES} (got {resamples!r})")
    method_options = {
        k: v
        for k, v in (
            ("interval", interval),
            ("statistic", statistic),
            ("resamples", resamples),
            ("scale", scale),
        )
        if v is not None
    }
    if method == "auto" and method_options:
        method = OPTION_OWNER[next(iter(method_options))]
    return CompareOptions(
        method,
        method_options,
        confidence,
        _threshold(given.get("threshold", 0.0)),
        given.get("correction", "holm"),
        given.get("diagnostics"),
    )


def _threshold(value: float | str) -> float:
    """A fraction ≥ 0 from ``0.01`` or ``"1%"``."""
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
        try:
            x = float(text.removesuffix("%")) / 100
        except ValueError:
            raise InputError(f"threshold {value!r}: not a percentage (e.g. '1%')") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
        if x >= 1:
            raise InputError(
                f"threshold {value!r}: a fraction below 1 (0.01 = 1%), or a percentage as text ('1%')"
            )
    else:
        raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
    if not (math.isfinite(x) and x >= 0):
        raise InputError(f"threshold {value!r}: must be ≥ 0")
    return x


@dataclass(frozen=True)
class ComparisonRequest:
    """What to compare and how.

    - ``experiment``: an id, a name (its latest experiment) or ``last``;
    - ``other``: compare experiment ``other`` against ``experiment`` as the baseline, cell
      by cell; ``variants`` then pairs variants (``"name"`` or ``("name_a", "name_b")``);
      without ``other``, ``variants`` keeps only these candidates;
    - ``across``: (PARAM, VALUE): every cell against the cell where PARAM=VALUE, within
      each variant, instead of each variant against the baseline;
    - ``scaling``: fit cost = a + b·PARAM^k per variant; ``table`` False: the fits only
      (``perflab compare --scaling``), True: the comparison and the fits (the report);
    - ``metrics``: only these metrics (the correction's family is then theirs);
    - ``movers``: the profiles' top movers (one experiment, not across).
    """

    experiment: str | int
    other: str | int | None = None
    variants: tuple[str | tuple[str, str], ...] = ()
    across: tuple[str, str] | None = None
    scaling: ScalingOptions | None = None
    table: bool = True
    metrics: tuple[str, ...] = ()
    options: CompareOptions = field(default_factory=CompareOptions)
    movers: bool = False

    def __post_init__(self) -> None:
        if self.across is not None and self.other is not None:
            raise InputError(
                f"--across compares the cells of one experiment with each other: drop the "
                f"second experiment ({self.other}), or compare the two experiments without "
                "--across"
            )
        if self.across is not None and self.scaling is not None:
            raise InputError(
                "--across and --scaling answer different questions: use one (--across "
                "PARAM=VALUE compares cells with a reference cell; --scaling PARAM fits cost "
                "against PARAM)"
            )


def parse_across(text: str) -> tuple[str, str]:
    """``PARAM=VALUE`` (``--across``) as (PARAM, VALUE); InputError (one line) otherwise."""
    param, sep, value = text.partition("=")
    param, value = param.strip(), value.strip()
    if not sep or not param or not value:
        raise InputError(
            f"--across {text!r}: write PARAM=VALUE, the matrix cell to compare every other "
            "cell with (e.g. --across instances=1)"
        )
    return param, value


def parse_variant_pairs(texts: Sequence[str] | None) -> list[tuple[str, str]] | None:
    """``NAME`` or ``NAME=NAME_B`` each (``--variant`` with B), checked; None: every variant."""
    if not texts:
        return None
    out = []
    for s in texts:
        left, sep, right = s.partition("=")
        left, right = left.strip(), (right.strip() if sep else left.strip())
        if not left or not right:
            raise InputError(
                f"--variant {s!r}: write NAME, or A_NAME=B_NAME to pair differently named variants"
            )
        out.append((left, right))
    return out


def scaling_options(
    param: str, exponent: float | None, at: str | None, metrics: Sequence[str]
) -> ScalingOptions:
    """A scaling fit over ``param`` (``--scaling``): cost = a + b·param^k, k fitted unless
    ``exponent``; ``at``: the size per-unit costs are compared at (``1000``, ``1e6``, ``10M``)."""
    from perflab.analysis.dataset import parse_number
    from perflab.analysis.scaling import ScalingOptions

    size = None
    if at is not None:
        size = parse_number(at)
        if size is None or size <= 0:
            raise InputError(f"--at {at!r}: expected a positive size such as 1000, 1e6 or 10M")
    return ScalingOptions(param, exponent, size, tuple(metrics))


def regressions(found: Answer, worse_than: float) -> list[Any]:
    """What is significantly worse by more than ``worse_than`` percent: compared cells of
    the comparison, or (group, fit) pairs of the scaling fits."""
    if found.fits is not None and found.result is None:
        from perflab.analysis.scaling import scaling_regressions

        return list(scaling_regressions(found.fits, worse_than))
    from perflab.analysis.compare import regressions as worse

    return list(worse(found.comparison, worse_than))


@dataclass(frozen=True)
class Answer:
    """A request's answer: what every renderer draws from.

    ``result``: the comparison (None for the scaling fits alone); ``fits``: the scaling
    fits; ``movers``: functions whose share of the profiles' samples changed; ``origins``:
    the stored experiments the compared runs come from, and how they map into the
    comparison; ``experiments``: those experiments' rows, baseline first; ``runs_view``:
    across, the comparison whose cells and variants the plots of runs draw."""

    request: ComparisonRequest
    result: CompareResult | None
    fits: ScalingResult | None
    movers: tuple[Mover, ...]
    origins: list[RunOrigin]
    experiments: list[ExperimentRow]
    runs_view: CompareResult | None = None

    @property
    def comparison(self) -> CompareResult:
        """The comparison (a request with ``table``)."""
        assert self.result is not None, "a scaling-only answer has no comparison"
        return self.result


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
        from perflab.analysis.compare import compare_dataset
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
    result: CompareResult | None,
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
        from perflab.analysis.compare import Note

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
