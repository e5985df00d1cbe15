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
"""

from __future__ import annotations

import json
import math

from perflab.analysis.compare import CompareResult
from perflab.report.format import tldr_text

SCHEMA = "perflab.compare/1"


def to_document(result: CompareResult) -> dict:
    d = result.dataset
    e = d.experiment
    return {
        "schema": SCHEMA,
        "experiment": {"id": e.id, "name": e.name, "description": e.description, "status": e.status,
                       "baseline": d.baseline, "params": d.params, "variants": d.variants},
        "method": result.method,
        "confidence": result.confidence,
        "threshold": result.threshold,
        "correction": result.correction,
        "correction_statement": result.correction_statement,
        "metrics": [{"name": m.name, "unit": m.unit, "better": m.better} for m in d.metrics],
        "comparisons": [
            {"cell": c.cell_key, "labels": c.labels, "variant": c.variant, "metric": c.metric.name,
             "verdict": c.verdict.value, "tldr": tldr_text(c.comparison, c.verdict),
             **(c.comparison.to_dict() if c.comparison else {})}
            for c in result.comparisons],
        "summaries": [
            {"cell": s.cell_key, "labels": s.labels, "variant": s.variant, "metric": s.metric.name,
             **(s.summary.to_dict() if s.summary else {"n": 0})}
            for s in result.summaries],
        "warnings": [{**n.warning.to_dict(), "cell": n.cell_key, "variant": n.variant, "metric": n.metric}
                     for n in result.notes],
        "failed_runs": [{"order_index": f.order_index, "cell": f.cell_key, "variant": f.variant,
                         "repetition": f.repetition, "status": f.status, "reason": f.reason}
                        for f in d.failed],
        "sweeps": [{**s.to_dict(), "tldr": tldr_text(s.comparison, s.verdict)} for s in result.sweeps],
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
