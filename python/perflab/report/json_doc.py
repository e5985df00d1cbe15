"""JSON: every document perflab exports, versioned; NaN and infinities are written as null.

- ``perflab compare ID --json`` (and ``.json`` exports): `render_compare_json`, schema
  ``perflab.compare/1`` (`compare_document`): everything the comparison's tables show;
- ``perflab compare ID --scaling PARAM --json``: `render_scaling_json`, schema
  ``perflab.scaling/1`` (`scaling_document`);
- ``perflab report ID --json``: `render_report_json`, schema ``perflab.report/1``
  (`report_document`): everything a report shows, the two documents above included.

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
  sweeps — added (geometric-mean ratio across the cells, the kernel-bypass
          memcached scaling experiment's "average gain").
  across — added, in an across-cells comparison only (``--across PARAM=VALUE``, on
          ``compare`` and ``report``): {param, value, reference, references: {cell: its
          reference cell}}.
  device_spreads — added, for runs a pool's devices made (``pool = N``): per cell and
          metric, {cell, labels, metric, offsets: [{device, runs, offset, low, high}],
          scale, confidence, p_value (every device alike), df, warnings}.

Schema ``perflab.report/1`` (one object; NaN and infinities are written as null):

  schema             "perflab.report/1"
  perflab_version    version of perflab that wrote it
  generated_at       local time of writing, "YYYY-MM-DD HH:MM TZ"
  title, description the report's heading and the experiment's description
  meta               [str]: the one-line facts under the title
  verdict            [str]: the verdict paragraph(s), plain text
  comparison         the whole ``perflab.compare/1`` document (`compare_document`): method,
                     confidence, threshold, metrics, comparisons (relative values are
                     fractions: 0.12 = +12%), summaries, warnings, failed_runs
  experiments        [{id, name, description, source, status, created_at, finished_at (unix s),
                     spec_path, spec_text, settings, version, source_commit, source_repo}]:
                     one, or A (baseline side) then B
  colors             {variant: "#rrggbb"}: the colour of each variant in every plot
  runs               [{position, run, experiment, cell, variant, warmup, host, started_at,
                     values{metric: value in the metric's unit}}] in execution order;
                     ``position`` is the x of the run-order plots, ``run`` the run's number in
                     its experiment (``perflab show EXP --run N``)
  failed_runs        [{run, experiment, cell, variant, repetition, status, reason}]
  latency_spectra    [{phase, cell, variant, runs, requests, nines[], percentiles[] (%),
                     merged_ms[], per_run_ms[[]]}]: latency (ms) at each percentile of the
                     merged histograms of the measured runs, and of each run alone
  numeric_params     {param: {label: value}}: matrix parameters plotted against
  environment        {columns: [{label, host, experiment, variants[], info{}}],
                     rows: [{label, values[] (one per column), differs}]} or null
  outputs            [{variant, run, experiment, cell, name, text, truncated}]: the tail of
                     each step's output of the last measured run of each variant
  reproduce          [{what, command}]
  sections           [{id, title, plots: [{key, title, caption, alt}]}]: the report's layout;
                     a plot's data is in comparison/runs/latency_spectra above
  scaling            the ``perflab.scaling/1`` document (`scaling_document`) of
                     ``--scaling PARAM``, or null without it

Change log (fields are only ever added within ``perflab.report/1``):
  1 — first version.
  scaling — added (``perflab report ID --scaling PARAM``); comparison.sweeps — added.
  experiments[].version, .source_commit, .source_repo — added (its place in a series:
          ``perflab history``; null when not given).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from perflab import _version  # read on use: importlib.metadata costs ~15 ms
from perflab.analysis.across import across_fields
from perflab.analysis.comparison_table import ComparisonTable
from perflab.report.blocks import Block, Details, Para, Plot, Section
from perflab.report.numbers import fmt_cost_change, tldr_text

if TYPE_CHECKING:  # the report model loads the plots (matplotlib): not for a comparison
    from perflab.analysis.scaling import ScalingResult
    from perflab.observe.movers import Mover
    from perflab.records import ExperimentRow
    from perflab.report.document import Report
    from perflab.report.rundata import EnvTable, FailedRunInfo, RunOutput, RunPoint, Spectrum

COMPARE_SCHEMA = "perflab.compare/1"
SCALING_SCHEMA = "perflab.scaling/1"
REPORT_SCHEMA = "perflab.report/1"


#: orjson, not the standard library: with an indent, `json.dumps` falls back to its pure-Python
#: encoder (0.4 s for the 9 MB document of an 80,000-run comparison; orjson: 0.02 s). orjson
#: writes NaN and infinities as null, as the schema says.
_ORJSON_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _dumps(doc: dict[str, Any]) -> str:
    return _dumps_bytes(doc).decode()


def _dumps_bytes(doc: dict[str, Any]) -> bytes:
    """The document as UTF-8, ending in a newline (OPT_APPEND_NEWLINE: no copy of 9 MB to
    add one)."""
    return orjson.dumps(doc, option=_ORJSON_OPTIONS | orjson.OPT_APPEND_NEWLINE)


# ----- perflab.compare/1 ----------------------------------------------------------------------


def compare_document(result: ComparisonTable) -> dict[str, Any]:
    """The ``perflab.compare/1`` document (module doc); an across-cells comparison's has
    ``across`` too (`perflab.analysis.across.across_fields`: what was compared with what)."""
    d = result.dataset
    e = d.experiment
    doc = {
        "schema": COMPARE_SCHEMA,
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
                # its fields as they are: orjson writes the nested dataclasses (location,
                # warnings) as `Summary.to_dict` does, at a fraction of the cost
                **(vars(s.summary) if s.summary else {"n": 0}),
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
    across = across_fields(result)
    if across is not None:
        doc["across"] = across
    if result.device_spreads:  # a pool's runs: each device's offset from the others
        doc["device_spreads"] = [
            {"cell": x.cell_key, "labels": x.labels, "metric": x.metric.name, **x.spread.to_dict()}
            for x in result.device_spreads
        ]
    return doc


def render_compare_json(result: ComparisonTable) -> str:
    return _dumps(compare_document(result))


def render_compare_json_bytes(result: ComparisonTable) -> bytes:
    """`render_compare_json` as UTF-8 (written as is to a byte stream: no decode and
    encode of a document that is 9 MB for 80,000 runs)."""
    return _dumps_bytes(compare_document(result))


def with_movers(result: ComparisonTable, movers: Sequence[Mover]) -> bytes:
    """The ``perflab.compare/1`` document with ``profile_movers`` (`perflab.observe.movers`)."""
    doc = compare_document(result)
    doc["profile_movers"] = [m.as_dict() for m in movers]
    return _dumps_bytes(doc)


# ----- perflab.scaling/1 ----------------------------------------------------------------------


def scaling_document(result: ScalingResult) -> dict[str, Any]:
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
    return _dumps(scaling_document(result))


# ----- perflab.report/1 -----------------------------------------------------------------------


def _text(p: Para) -> str:
    return "".join(s.text for s in p.spans).strip()


def _plots(blocks: Iterable[Block]) -> list[dict[str, str]]:
    out = []
    for b in blocks:
        if isinstance(b, Plot):
            out.append({"key": b.key, "title": b.title, "caption": b.caption, "alt": b.alt})
        elif isinstance(b, (Section, Details)):
            out += _plots(b.blocks)
    return out


def report_document(r: Report) -> dict[str, Any]:
    """The ``perflab.report/1`` document (module doc)."""
    return {
        "schema": REPORT_SCHEMA,
        "perflab_version": _version.__version__,
        "generated_at": r.generated_at,
        "title": r.title,
        "description": r.description,
        "meta": list(r.meta),
        "verdict": [_text(p) for p in r.verdict],
        "comparison": compare_document(r.result),
        "experiments": [_experiment(e) for e in r.experiments],
        "colors": dict(r.colors),
        "runs": [_run(p) for p in r.runs.runs],
        "failed_runs": [_failed_run(f) for f in r.runs.failed],
        "latency_spectra": [_spectrum(s) for s in r.runs.spectra],
        "numeric_params": r.runs.numeric_params,
        "environment": _environment(r.runs.environment),
        "outputs": [_output(o) for o in r.runs.outputs],
        "reproduce": [{"what": what, "command": cmd} for what, cmd in r.reproduce],
        "sections": [{"id": s.id, "title": s.title, "plots": _plots(s.blocks)} for s in r.sections],
        "scaling": scaling_document(r.scaling) if r.scaling is not None else None,
    }


def _experiment(e: ExperimentRow) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "description": e.description,
        "source": e.source,
        "status": e.status,
        "created_at": e.created_at,
        "finished_at": e.finished_at,
        "spec_path": e.spec_path,
        "spec_text": e.spec_text,
        "settings": e.settings,
        "version": e.version,
        "source_commit": e.source_commit,
        "source_repo": e.source_repo,
    }


def _run(p: RunPoint) -> dict[str, Any]:
    return {
        "position": p.position,
        "run": p.run,
        "experiment": p.experiment_id,
        "cell": p.cell_key,
        "variant": p.variant,
        "warmup": p.warmup,
        "host": p.host,
        "started_at": p.started_at,
        "values": p.values,
    }


def _failed_run(f: FailedRunInfo) -> dict[str, Any]:
    return {
        "run": f.run,
        "experiment": f.experiment_id,
        "cell": f.cell_key,
        "variant": f.variant,
        "repetition": f.repetition,
        "status": f.status,
        "reason": f.reason,
    }


def _spectrum(s: Spectrum) -> dict[str, Any]:
    return {
        "phase": s.phase,
        "cell": s.cell_key,
        "variant": s.variant,
        "runs": s.runs,
        "requests": s.requests,
        "nines": list(s.nines),
        "percentiles": list(s.percentiles),
        "merged_ms": list(s.merged),
        "per_run_ms": [list(x) for x in s.per_run],
    }


def _environment(env: EnvTable | None) -> dict[str, Any] | None:
    if env is None:
        return None
    return {
        "columns": [
            {
                "label": c.label,
                "host": c.host,
                "experiment": c.experiment_id,
                "variants": list(c.variants),
                "info": c.info,
            }
            for c in env.columns
        ],
        "rows": [
            {
                "label": label,
                "values": [env.value(i, j) for i in range(len(env.columns))],
                "differs": env.differs[j],
            }
            for j, label in enumerate(env.labels)
        ],
    }


def _output(o: RunOutput) -> dict[str, Any]:
    return {
        "variant": o.variant,
        "run": o.run,
        "experiment": o.experiment_id,
        "cell": o.cell_key,
        "name": o.name,
        "text": o.text,
        "truncated": o.truncated,
    }


def render_report_json(r: Report) -> str:
    return _dumps(report_document(r))
