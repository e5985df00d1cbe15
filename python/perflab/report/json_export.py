"""JSON export of a comparison: everything the tables show, versioned.

Schema ``perflab.compare/1``:
  experiment{id,name,description,status,baseline,params,variants}, method, confidence,
  threshold, correction, correction_statement, metrics[{name,unit,better}], comparisons[{cell,labels,variant,metric,verdict,
  tldr, n_baseline,n_candidate,baseline_location,candidate_location,estimate,low,high,
  p_value,significant,warnings}], summaries[{cell,labels,variant,metric,n,mean,median,
  stddev,min,max,margin_of_error,ci_low,ci_high}], warnings[{code,message,cell,variant,metric}],
  failed_runs[{order_index,cell,variant,repetition,status,reason}],
  sweeps[{variant,metric,label,cells,total_cells,left_out[],confidence,ratio,ratio_low,ratio_high,
  change,low,high,q_statistic,i_squared,df,cell_ratios[],verdict,tldr}]: per candidate × metric,
  the geometric mean over the cells of the candidate/baseline ratio of means (empty list for
  fewer than 2 cells; ``cells`` counts those averaged, ``left_out`` the others' keys).
Relative quantities (estimate, low, high, change) are fractions of the baseline (0.12 = +12%);
ratios are candidate/baseline (1.12). NaN is written as null.

Change log (fields are only ever added within ``perflab.compare/1``):
  sweeps — added (geometric-mean ratio across the cells, seed 002's "average gain").

``perflab compare ID --scaling PARAM --json`` writes another document, schema
``perflab.scaling/1`` (`scaling_document`).
"""

from __future__ import annotations

import json
import math

from perflab.analysis.compare import CompareResult
from perflab.analysis.scaling import ScalingResult
from perflab.report.format import fmt_cost_change, tldr_text

SCHEMA = "perflab.compare/1"


def to_document(result: CompareResult) -> dict:
    d = result.dataset
    e = d.experiment
    return {
        "schema": SCHEMA,
        "experiment": {
            "id": e.id,
            "name": e.name,
            "description": e.description,
            "status": e.status,
            "baseline": d.baseline,
            "params": d.params,
            "variants": d.variants,
        },
        "method": result.method,
        "confidence": result.confidence,
        "threshold": result.threshold,
        "correction": result.correction,
        "correction_statement": result.correction_statement,
        "metrics": [{"name": m.name, "unit": m.unit, "better": m.better} for m in d.metrics],
        "comparisons": [
            {
                "cell": c.cell_key,
                "labels": c.labels,
                "variant": c.variant,
                "metric": c.metric.name,
                "verdict": c.verdict.value,
                "tldr": tldr_text(c.comparison, c.verdict, c.metric.unit),
                **(c.comparison.to_dict() if c.comparison else {}),
            }
            for c in result.comparisons
        ],
        "summaries": [
            {
                "cell": s.cell_key,
                "labels": s.labels,
                "variant": s.variant,
                "metric": s.metric.name,
                **(s.summary.to_dict() if s.summary else {"n": 0}),
            }
            for s in result.summaries
        ],
        "warnings": [
            {**n.warning.to_dict(), "cell": n.cell_key, "variant": n.variant, "metric": n.metric}
            for n in result.notes
        ],
        "failed_runs": [
            {
                "order_index": f.order_index,
                "cell": f.cell_key,
                "variant": f.variant,
                "repetition": f.repetition,
                "status": f.status,
                "reason": f.reason,
            }
            for f in d.failed
        ],
        "sweeps": [
            {**s.to_dict(), "tldr": tldr_text(s.comparison, s.verdict, s.metric.unit)}
            for s in result.sweeps
        ],
    }


def render_json(result: CompareResult) -> str:
    return json.dumps(_clean(to_document(result)), indent=2, ensure_ascii=False) + "\n"


def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


SCALING_SCHEMA = "perflab.scaling/1"


def scaling_document(result: ScalingResult) -> dict:
    """``perflab compare ID --scaling PARAM --json``: schema ``perflab.scaling/1``.

    experiment{id,name,baseline,params,variants}, param, model ("a + b·n^k"), exponent (null:
    fitted), at (null: the largest size), confidence, threshold, groups[{metric{name,unit,better},
    fixed{param: label} (the other matrix parameters of this fit), sizes[], size_labels[], at,
    fits[{variant, baseline (bool), a, b, k, per_unit: {value,low,high}, exponent_fixed,
    reduced_chi2, df, means[], sems[], vs_baseline}]}], warnings[{code,message,details,cell,
    variant,metric}] (``cell``: the ``fixed`` labels as ``p=v,...``, empty for all).
    Units: a, means and sems in the metric's unit; b in the metric's unit per PARAM^k;
    per_unit (= b·at^(k−1)) in the metric's unit per unit of PARAM, at ``at``. vs_baseline
    (null for the baseline): {estimate, low, high, significant, verdict, text}, the relative
    difference of per-unit costs as fractions (0.056 = the candidate costs 5.6% more per unit),
    verdict judged with the metric's ``better``. NaN (an undefined interval) is written as null.
    """
    d = result.dataset
    e = d.experiment
    groups = []
    for g in result.groups:
        fits = []
        for f in g.fits:
            fit = f.fit
            vs = None
            if f.versus is not None:
                v = f.versus
                vs = {
                    "estimate": v.estimate,
                    "low": v.low,
                    "high": v.high,
                    "significant": v.significant,
                    "verdict": f.verdict.value if f.verdict else None,
                    "text": fmt_cost_change(v.estimate, v.low, v.high, f.verdict, g.metric.better),
                }
            fits.append(
                {
                    "variant": f.variant,
                    "baseline": f.variant == d.baseline,
                    "a": fit.a.to_dict(),
                    "b": fit.b.to_dict(),
                    "k": fit.k.to_dict(),
                    "per_unit": fit.per_unit(g.at).to_dict(),
                    "exponent_fixed": fit.exponent_fixed,
                    "reduced_chi2": fit.reduced_chi2,
                    "df": fit.df,
                    "means": list(fit.means),
                    "sems": list(fit.sems),
                    "vs_baseline": vs,
                }
            )
        groups.append(
            {
                "metric": {"name": g.metric.name, "unit": g.metric.unit, "better": g.metric.better},
                "fixed": g.fixed,
                "sizes": list(g.sizes),
                "size_labels": [result.size_label(n) for n in g.sizes],
                "at": g.at,
                "fits": fits,
            }
        )
    return {
        "schema": SCALING_SCHEMA,
        "experiment": {
            "id": e.id,
            "name": e.name,
            "baseline": d.baseline,
            "params": d.params,
            "variants": d.variants,
        },
        "param": result.param,
        "model": "a + b·n^k",
        "exponent": result.options.exponent,
        "at": result.options.at,
        "confidence": result.confidence,
        "threshold": result.threshold,
        "groups": groups,
        "warnings": [
            {**n.warning.to_dict(), "cell": n.cell_key, "variant": n.variant, "metric": n.metric}
            for n in result.notes
        ],
    }


def render_scaling_json(result: ScalingResult) -> str:
    return json.dumps(_clean(scaling_document(result)), indent=2, ensure_ascii=False) + "\n"
