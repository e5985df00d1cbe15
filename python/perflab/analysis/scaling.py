"""Scaling fits over a numeric matrix parameter: cost = a + b·n^k per variant and metric,
and each candidate's per-unit cost against the baseline's (the lookup-structure
experiment's "5.59% degradation", with its interval). ``perflab compare ID --scaling PARAM``.

The statistics are `perflab.stats.scaling` (pure); this module picks the runs: for each
metric, and for each combination of the *other* matrix parameters (one fit per group),
every variant's runs at every value of PARAM. Reporters draw the result
(`perflab.report.scaling_table` and the export modules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from perflab.analysis.comparison_table import Note, dedupe_notes
from perflab.analysis.dataset import Dataset
from perflab.errors import InputError
from perflab.stats import (
    Comparison,
    ScalingComparison,
    ScalingFit,
    StatWarning,
    Verdict,
    classify,
    compare_scaling,
    fit_scaling,
)
from perflab.stats.scaling import MIN_SIZES  # distinct sizes a fit needs
from perflab.store import MetricDef

#: The fitted exponent's bounds in `stats.scaling.fit_scaling`: a fit ending there did not find one.
EXPONENT_BOUNDS = (0.05, 4.0)


@dataclass(frozen=True)
class ScalingOptions:
    """What to fit: ``param`` (a numeric matrix parameter), ``exponent`` (fixed k, or None to
    fit it), ``at`` (the size per-unit costs are given at; None: the largest measured),
    ``metrics`` (names; empty: every metric)."""

    param: str
    exponent: float | None = None
    at: float | None = None
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class VariantFit:
    """One variant's fit, and (for a candidate) its per-unit cost against the baseline's.

    versus:  relative difference of per-unit costs at the group's ``at`` (fractions; None for
             the baseline). verdict: `classify` of it with the metric's ``better`` (a higher
             per-unit cost of a lower-is-better metric is WORSE: a degradation).
    """

    variant: str
    fit: ScalingFit
    versus: ScalingComparison | None = None
    verdict: Verdict | None = None


@dataclass(frozen=True)
class ScalingGroup:
    """The fits of one metric at one combination of the other matrix parameters.

    fixed: {other param: label} ({} when PARAM is the only matrix parameter).
    sizes: the values of PARAM fitted, ascending; at: where per-unit costs are given.
    """

    metric: MetricDef
    fixed: dict[str, str]
    sizes: tuple[float, ...]
    at: float
    fits: list[VariantFit]

    @property
    def where(self) -> str:
        """``threads=2,mode=x`` for notes; empty for a one-parameter matrix."""
        return ",".join(f"{k}={v}" for k, v in self.fixed.items())


@dataclass(frozen=True)
class ScalingResult:
    """Every group's fits, with notes (fit warnings, differing exponents, extrapolation)."""

    dataset: Dataset
    options: ScalingOptions
    confidence: float
    threshold: float
    labels: dict[float, str]  # value of PARAM → its label, to name sizes as the matrix does ("10M")
    groups: list[ScalingGroup] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def param(self) -> str:
        return self.options.param

    def size_label(self, n: float) -> str:
        """``10M`` for a measured size; a short number (``2.5e7``) for any other."""
        return self.labels.get(n) or f"{n:g}"


def fit_dataset(
    data: Dataset,
    options: ScalingOptions,
    *,
    confidence: float | None = None,
    threshold: float = 0.0,
) -> ScalingResult:
    """Fit cost = a + b·PARAM^k per variant, metric and combination of the other parameters.

    Raises InputError (one line) for an unknown parameter or metric, a parameter that is not
    numeric, too few distinct values of it, fewer than 2 runs at a size, or data the model
    cannot take (a non-positive mean cost).
    """
    if confidence is None:
        confidence = float(data.experiment.settings.get("confidence", 0.95))
    param = options.param
    values = data.numeric_values(param)  # InputError: unknown or non-numeric
    metrics = _metrics(data, options.metrics)
    _check_options(options)
    _check_sizes(param, sorted(set(values.values())), options.exponent)
    labels: dict[float, str] = {}
    for key, cell_labels in data.cells:
        labels.setdefault(values[key], cell_labels.get(param, ""))
    others = [p for p in data.params if p != param]
    groups: dict[tuple[str, ...], list[str]] = {}
    for key, cell_labels in data.cells:
        groups.setdefault(tuple(cell_labels.get(p, "") for p in others), []).append(key)

    ctx = _Context(data, options, values, labels, confidence, threshold)
    out: list[ScalingGroup] = []
    notes: list[Note] = []
    for metric in metrics:
        for fixed_labels, keys in groups.items():
            group, group_notes = _fit_group(ctx, metric, dict(zip(others, fixed_labels)), keys)
            out.append(group)
            notes += group_notes
    return ScalingResult(data, options, confidence, threshold, labels, out, dedupe_notes(notes))


def _check_options(options: ScalingOptions) -> None:
    """InputError for an exponent or a size ``at`` that is not a positive number."""
    if options.exponent is not None and not (
        math.isfinite(options.exponent) and options.exponent > 0
    ):
        raise InputError(
            f"--exponent must be a positive number, e.g. 1 for a linear cost (got {options.exponent:g})"
        )
    if options.at is not None and not (math.isfinite(options.at) and options.at > 0):
        raise InputError(f"--at must be a positive size (got {options.at:g})")


def _check_sizes(param: str, sizes: list[float], exponent: float | None) -> None:
    """InputError unless the distinct values of PARAM (ascending) are positive and enough."""
    if sizes[0] <= 0:
        raise InputError(f"'{param}' must be positive to fit a + b·{param}^k (it has {sizes[0]:g})")
    needed = MIN_SIZES - 1 if exponent is not None else MIN_SIZES
    if len(sizes) < needed:
        hint = (
            " (or give --exponent K to fit a and b only, with 3)"
            if exponent is None and len(sizes) == 3
            else ""
        )
        raise InputError(
            f"a scaling fit over '{param}' needs ≥ {needed} distinct values of it{hint}; "
            f"the matrix has {len(sizes)}"
        )


@dataclass(frozen=True)
class _Context:
    """What the fits of every group share. values: cell key → its value of PARAM; labels:
    value of PARAM → its label; confidence and threshold: of the fits and verdicts."""

    data: Dataset
    options: ScalingOptions
    values: dict[str, float]
    labels: dict[float, str]
    confidence: float
    threshold: float


def _fit_group(
    ctx: _Context, metric: MetricDef, fixed: dict[str, str], keys: list[str]
) -> tuple[ScalingGroup, list[Note]]:
    """The fits of one metric over the cells ``keys`` (one combination ``fixed`` of the other
    parameters), each candidate's against the baseline's, and the notes they call for."""
    param = ctx.options.param
    group_sizes = sorted({ctx.values[k] for k in keys})
    where = ",".join(f"{k}={v}" for k, v in fixed.items())
    fits = _fit_variants(ctx, metric, keys, where)
    at = float(ctx.options.at if ctx.options.at is not None else group_sizes[-1])
    notes = _extrapolation_notes(ctx, group_sizes, at, where, metric.name)
    rows = []
    base_fit = fits.get(ctx.data.baseline)
    for variant, fit in fits.items():
        notes += [Note(w, where, variant, metric.name) for w in fit.warnings]
        notes += _exponent_notes(fit, param, where, variant, metric.name)
        if variant == ctx.data.baseline or base_fit is None:
            rows.append(VariantFit(variant, fit))
            continue
        vs = compare_scaling(base_fit, fit, at)
        verdict = classify(_as_comparison(vs, fit, base_fit), metric.better, ctx.threshold)
        rows.append(VariantFit(variant, fit, vs, verdict))
        if _exponents_differ(base_fit, fit):
            notes.append(
                _exponents_differ_note(ctx, base_fit, fit, at, where, variant, metric.name)
            )
    return ScalingGroup(metric, fixed, tuple(group_sizes), at, rows), notes


def _fit_variants(
    ctx: _Context, metric: MetricDef, keys: list[str], where: str
) -> dict[str, ScalingFit]:
    """Each variant's fit over its runs in the cells ``keys``; InputError (naming the place)
    for fewer than 2 runs at a size or data the model cannot take."""
    param = ctx.options.param
    fits: dict[str, ScalingFit] = {}
    for variant in ctx.data.variants:
        xs: list[float] = []
        ys: list[float] = []
        for key in keys:
            sample = ctx.data.sample(key, variant, metric.name)
            if len(sample) < 2:
                raise InputError(
                    f"{key} · {variant} · {metric.name}: {len(sample)} run(s); a scaling fit "
                    f"needs ≥ 2 runs at every value of '{param}' (complete the runs, or "
                    "choose other metrics with --metric)"
                )
            xs += [ctx.values[key]] * len(sample)
            ys += sample
        try:
            fits[variant] = fit_scaling(xs, ys, ctx.confidence, exponent=ctx.options.exponent)
        except ValueError as e:
            place = " · ".join(x for x in (where, variant, metric.name) if x)
            raise InputError(
                f"scaling fit of {place}: {e} (choose other metrics with --metric)"
            ) from None
    return fits


def _extrapolation_notes(
    ctx: _Context, group_sizes: list[float], at: float, where: str, metric: str
) -> list[Note]:
    """A note when per-unit costs are given at a size ``at`` outside the measured ones."""
    if group_sizes[0] <= at <= group_sizes[-1]:
        return []
    first, last = ctx.labels[group_sizes[0]], ctx.labels[group_sizes[-1]]
    return [
        Note(
            StatWarning(
                "extrapolated",
                f"per-unit costs at {ctx.options.param} = {at:g} are extrapolated beyond the measured "
                f"{first} … {last}: the fitted model is assumed to hold there",
                {"at": at},
            ),
            where,
            "",
            metric,
        )
    ]


def _exponents_differ_note(
    ctx: _Context,
    base: ScalingFit,
    fit: ScalingFit,
    at: float,
    where: str,
    variant: str,
    metric: str,
) -> Note:
    """The per-unit difference depends on the size when the exponents differ: say where it is given."""
    return Note(
        StatWarning(
            "exponents_differ",
            f"the exponents differ ({ctx.data.baseline} k = {base.k.value:.3f}, {variant} k = "
            f"{fit.k.value:.3f}, intervals apart): the per-unit difference depends on {ctx.options.param}; "
            f"it is given at {ctx.labels.get(at) or f'{at:g}'} (--at N gives it elsewhere)",
            {"k_baseline": base.k.value, "k_candidate": fit.k.value},
        ),
        where,
        variant,
        metric,
    )


def scaling_regressions(result: ScalingResult, pct: float) -> list[tuple[ScalingGroup, VariantFit]]:
    """Candidates whose per-unit cost is significantly worse, by more than ``pct`` percent."""
    out = []
    for g in result.groups:
        for f in g.fits:
            if f.verdict is not Verdict.WORSE or f.versus is None:
                continue
            worse_by = f.versus.estimate if g.metric.better == "lower" else -f.versus.estimate
            if worse_by * 100 > pct:
                out.append((g, f))
    return out


def _metrics(data: Dataset, names: tuple[str, ...]) -> list[MetricDef]:
    if not names:
        return list(data.metrics)
    by_name = {m.name: m for m in data.metrics}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise InputError(f"no metric '{unknown[0]}' (metrics: {', '.join(by_name)})")
    return [by_name[n] for n in dict.fromkeys(names)]


def _as_comparison(vs: ScalingComparison, cand: ScalingFit, base: ScalingFit) -> Comparison:
    """The per-unit difference in the shape `classify` judges (relative change, interval)."""
    return Comparison(
        method="scaling",
        confidence=vs.confidence,
        n_baseline=len(base.sizes),
        n_candidate=len(cand.sizes),
        baseline_location=vs.baseline.value,
        candidate_location=vs.candidate.value,
        estimate=vs.estimate,
        low=vs.low,
        high=vs.high,
        p_value=math.nan,
        statistic="per-unit cost",
        interval="scaling",
    )


def _exponents_differ(a: ScalingFit, b: ScalingFit) -> bool:
    if a.exponent_fixed or b.exponent_fixed:
        return False
    return a.k.high < b.k.low or b.k.high < a.k.low


def _exponent_notes(
    fit: ScalingFit, param: str, where: str, variant: str, metric: str
) -> list[Note]:
    if fit.exponent_fixed:
        return []
    lo, hi = EXPONENT_BOUNDS
    k = fit.k.value
    if math.isclose(k, lo, rel_tol=1e-3) or math.isclose(k, hi, rel_tol=1e-3):
        return [
            Note(
                StatWarning(
                    "exponent_at_bound",
                    f"the fitted exponent stopped at its bound k = {k:g}: the cost does not follow a + b·{param}^k "
                    f"over this range ({'it hardly grows with ' + param if k < 1 else 'it grows faster than any power'}); "
                    "per-unit costs from this fit mean little — fix the exponent with --exponent K, or fit a "
                    "narrower range",
                    {"k": k},
                ),
                where,
                variant,
                metric,
            )
        ]
    return []
