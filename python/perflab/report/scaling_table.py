"""The tables of a scaling fit (`perflab.analysis.scaling.ScalingResult`) as document
blocks: one `blocks.Table` per metric and combination of the other matrix parameters, each
with its notes, and the whole fit as one `blocks.Section` (`scaling_section`). The terminal,
Markdown and report writers draw them; the numbers come from the result, only scaled to
readable units here (seconds per lookup → ns per lookup)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.analysis.scaling import ScalingGroup, ScalingResult
from perflab.report.blocks import Block, Bullets, Cell, Para, Section, Span, Table
from perflab.report.numbers import fmt_cost_change, fmt_estimate, fmt_sig, readable_unit
from perflab.report.tables import BASELINE_MARK, variant_cell, warning_blocks


@dataclass(frozen=True)
class ScalingTable:
    table: Table
    notes: list[str]  # one line per warning of this table's fits, "variant: message"


def per_what(param: str) -> str:
    """What one unit of the parameter is called: lookups → lookup, instances → instance."""
    p = param
    if p.endswith("ies") and len(p) > 4:
        return p[:-3] + "y"
    if p.endswith(("sses", "xes", "ches", "shes")):
        return p[:-2]
    if p.endswith("s") and not p.endswith("ss") and len(p) > 3:
        return p[:-1]
    return p


def model_text(result: ScalingResult) -> str:
    """``a + b·lookups^k`` (or ``a + b·lookups`` with --exponent 1)."""
    k = result.options.exponent
    p = result.param
    if k is None:
        return f"a + b·{p}^k"
    return f"a + b·{p}" if k == 1 else f"a + b·{p}^{k:g}"


def _finite(*xs: float) -> list[float]:
    return [abs(x) for x in xs if math.isfinite(x)]


def scaling_table(
    result: ScalingResult, group: ScalingGroup, colors: dict[str, str] | None = None
) -> ScalingTable:
    """``colors``: each variant's name in its plot colour (`tables.variant_cell`)."""
    data = result.dataset
    m = group.metric
    per = per_what(result.param)
    at_label = result.size_label(group.at)
    per_units = {f.variant: f.fit.per_unit(group.at) for f in group.fits}
    base_pu = per_units.get(data.baseline)
    pu_unit, pu_factor = readable_unit(
        m.unit,
        base_pu.value
        if base_pu
        else max(_finite(*(p.value for p in per_units.values())), default=math.nan),
    )
    a_unit, a_factor = readable_unit(
        m.unit, max(_finite(*(f.fit.a.value for f in group.fits)), default=math.nan)
    )
    cost_unit = f"{pu_unit} per {per}" if pu_unit else f"per {per}"
    columns = (
        "variant",
        "fixed cost a" + (f" ({a_unit})" if a_unit else ""),
        f"per-unit cost at {at_label} ({cost_unit})",
        "exponent k",
        "χ²/df",
        f"vs {data.baseline}",
    )
    rows = []
    for f in group.fits:
        fit = f.fit
        pu = per_units[f.variant]
        k = (
            f"{fit.k.value:g} (fixed)"
            if fit.exponent_fixed
            else fmt_estimate(fit.k.value, fit.k.low, fit.k.high)
        )
        undefined = math.isnan(pu.low)
        if f.versus is None:
            vs = Cell("baseline" if f.variant == data.baseline else "n/a")
        else:
            vs = Cell(
                fmt_cost_change(
                    f.versus.estimate, f.versus.low, f.versus.high, f.verdict, m.better
                ),
                f.verdict,
            )
        rows.append(
            (
                variant_cell(
                    f.variant + (BASELINE_MARK if f.variant == data.baseline else ""), colors
                ),
                Cell(fmt_estimate(fit.a.value, fit.a.low, fit.a.high, a_factor)),
                Cell("–" if undefined else fmt_estimate(pu.value, pu.low, pu.high, pu_factor)),
                Cell(k),
                Cell(fmt_sig(fit.reduced_chi2, 3)),
                vs,
            )
        )
    unit = f" ({m.unit})" if m.unit else ""
    where = f" at {group.where}" if group.where else ""
    sizes = f"{result.size_label(group.sizes[0])} … {result.size_label(group.sizes[-1])}"
    title = (
        f"{m.name}{unit} against {result.param}{where}: cost = {model_text(result)} per variant, fitted to "
        f"the means at {len(group.sizes)} sizes ({sizes}); {result.confidence:.0%} intervals; "
        f"{'lower' if m.better == 'lower' else 'higher'} is better"
    )
    notes = [
        f"{n.variant}: {n.warning.message}" if n.variant else n.warning.message
        for n in result.notes
        if n.metric == m.name and n.cell_key == group.where
    ]
    return ScalingTable(Table(title, columns, tuple(rows), (False,) + (True,) * 5), notes)


def scaling_tables(
    result: ScalingResult, colors: dict[str, str] | None = None
) -> list[ScalingTable]:
    return [scaling_table(result, g, colors) for g in result.groups]


def method_line(result: ScalingResult) -> str:
    """One line under the tables: how the fit was made (README: How perflab decides)."""
    return (
        f"Weighted least squares of the per-size means (weights 1/SE²), exponent "
        f"{'fixed' if result.options.exponent is not None else 'fitted'}; intervals widen by √(χ²/df) when "
        f"the model misses the means beyond their noise. Per-unit cost = b·n^(k−1) at n = the size shown; "
        f"'vs {result.dataset.baseline}' = relative difference of per-unit costs."
    )


def scaling_section(result: ScalingResult) -> Section:
    """``perflab compare ID --scaling PARAM --format markdown``: one table per fit with its
    warnings as bullets, how the fit was made, and the warnings of no one metric."""
    e = result.dataset.experiment
    blocks: list[Block] = []
    for table in scaling_tables(result):
        blocks.append(table.table)
        if table.notes:
            blocks.append(Bullets(tuple(Para.of(n) for n in table.notes)))
    blocks.append(Para.of(Span(method_line(result), em=True)))
    blocks += warning_blocks([n.warning.message for n in result.notes if not n.metric])
    return Section(
        "scaling", f"{e.name} (experiment {e.id}): scaling with {result.param}", tuple(blocks)
    )
