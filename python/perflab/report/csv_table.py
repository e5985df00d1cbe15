"""CSV: one row per comparison (cell × candidate variant × metric), numbers unformatted.

With ≥ 2 cells, one more row per candidate × metric gives the sweep summary: ``cell`` is
its label (``all 6 cells (geometric mean)``), ``method`` is ``sweep``, ``n_*`` count the
runs averaged, the means and the p-value are empty, ``change_pct``/``ci_*_pct`` are the
geometric-mean ratio − 1 and its interval, ``cells`` and ``i_squared`` (between-cell
heterogeneity, 0…1) are filled. Those two columns are empty on the per-cell rows.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from perflab.analysis.comparison_table import ComparedCell, ComparisonTable
from perflab.analysis.sweep import SweepRow
from perflab.report.numbers import fmt_cost_change, tldr_text

if TYPE_CHECKING:
    from perflab.analysis.scaling import ScalingResult

#: The columns after the matrix parameters' (one column each, first).
COMPARE_COLUMNS = [
    "cell",
    "variant",
    "baseline",
    "metric",
    "unit",
    "better",
    "method",
    "confidence",
    "n_baseline",
    "n_variant",
    "baseline_mean",
    "variant_mean",
    "change_pct",
    "ci_low_pct",
    "ci_high_pct",
    "p_value",
    "verdict",
    "tldr",
    "cells",
    "i_squared",
    # a baseline within its noise of zero: the change in the metric's unit
    "scale",
    "p_raw",
    "change",
    "ci_low",
    "ci_high",
]


def render_csv(result: ComparisonTable) -> str:
    data = result.dataset
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(data.params) + COMPARE_COLUMNS)
    for c in result.comparisons:
        w.writerow(_comparison_row(result, c))
    for s in result.sweeps:
        w.writerow(_sweep_row(result, s))
    return buf.getvalue()


def _comparison_row(result: ComparisonTable, c: ComparedCell) -> list[object]:
    """One cell × candidate × metric: relative columns in %, or the absolute ones when the
    change is on the metric's own scale."""
    data = result.dataset
    k = c.comparison
    pct = k is not None and k.scale != "absolute"
    nums = (
        [
            k.n_baseline,
            k.n_candidate,
            k.baseline_location,
            k.candidate_location,
            *((k.estimate * 100, k.low * 100, k.high * 100) if pct else ("", "", "")),
            k.p_value,
        ]
        if k
        else [""] * 8
    )
    extra = (
        [k.scale, k.p_raw, *((k.estimate, k.low, k.high) if not pct else ("", "", ""))]
        if k
        else [""] * 5
    )
    return (
        [c.labels.get(p, "") for p in data.params]
        + [
            c.cell_key,
            c.variant,
            data.baseline,
            c.metric.name,
            c.metric.unit,
            c.metric.better,
            k.method if k is not None else result.method,
            result.confidence,
        ]
        + nums
        + [c.verdict.value, tldr_text(k, c.verdict, c.metric.unit), "", ""]
        + extra
    )


def _sweep_row(result: ComparisonTable, s: SweepRow) -> list[object]:
    """The geometric mean over the cells of one candidate × metric (module doc)."""
    data = result.dataset
    k = s.comparison
    return [""] * len(data.params) + [
        s.label,
        s.variant,
        data.baseline,
        s.metric.name,
        s.metric.unit,
        s.metric.better,
        "sweep",
        result.confidence,
        k.n_baseline,
        k.n_candidate,
        "",
        "",
        k.estimate * 100,
        k.low * 100,
        k.high * 100,
        k.p_value,
        s.verdict.value,
        tldr_text(k, s.verdict, s.metric.unit),
        s.summary.cells,
        s.summary.i_squared,
        k.scale,
        k.p_raw,
        "",
        "",
        "",
    ]


def render_scaling_csv(result: ScalingResult) -> str:
    """``perflab compare ID --scaling PARAM --format csv``: one row per metric × combination of
    the other parameters × variant. Units are the metric's own, unscaled: a in the metric's
    unit, per_unit in the metric's unit per unit of PARAM at ``at``; vs_*_pct are the relative
    difference of per-unit costs against the baseline in percent (empty for the baseline)."""
    data = result.dataset
    others = [p for p in data.params if p != result.param]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        others
        + [
            "metric",
            "unit",
            "better",
            "param",
            "variant",
            "baseline",
            "confidence",
            "a",
            "a_low",
            "a_high",
            "at",
            "per_unit",
            "per_unit_low",
            "per_unit_high",
            "k",
            "k_low",
            "k_high",
            "exponent_fixed",
            "reduced_chi2",
            "vs_pct",
            "vs_low_pct",
            "vs_high_pct",
            "verdict",
            "text",
        ]
    )
    for g in result.groups:
        m = g.metric
        for f in g.fits:
            fit, pu, v = f.fit, f.fit.per_unit(g.at), f.versus
            vs = (
                [
                    v.estimate * 100,
                    v.low * 100,
                    v.high * 100,
                    f.verdict.value if f.verdict else "",
                    fmt_cost_change(v.estimate, v.low, v.high, f.verdict, m.better),
                ]
                if v
                else [""] * 4 + ["baseline"]
            )
            w.writerow(
                [g.fixed.get(p, "") for p in others]
                + [
                    m.name,
                    m.unit,
                    m.better,
                    result.param,
                    f.variant,
                    data.baseline,
                    result.confidence,
                    fit.a.value,
                    fit.a.low,
                    fit.a.high,
                    g.at,
                    pu.value,
                    pu.low,
                    pu.high,
                    fit.k.value,
                    fit.k.low,
                    fit.k.high,
                    fit.exponent_fixed,
                    fit.reduced_chi2,
                ]
                + vs
            )
    return buf.getvalue()
