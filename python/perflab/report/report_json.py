"""JSON export of everything a report shows: ``perflab report ID --json``.

Schema ``perflab.report/1`` (one object; NaN and infinities are written as null):

  schema             "perflab.report/1"
  perflab_version    version of perflab that wrote it
  generated_at       local time of writing, "YYYY-MM-DD HH:MM TZ"
  title, description the report's heading and the experiment's description
  meta               [str]: the one-line facts under the title
  verdict            [str]: the verdict paragraph(s), plain text
  comparison         the whole ``perflab.compare/1`` document (`json_export`): method,
                     confidence, threshold, metrics, comparisons (relative values are
                     fractions: 0.12 = +12%), summaries, warnings, failed_runs
  experiments        [{id, name, description, source, status, created_at, finished_at (unix s),
                     spec_path, spec_text, settings}]: one, or A (baseline side) then B
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
  scaling            the ``perflab.scaling/1`` document (`json_export.scaling_document`) of
                     ``--scaling PARAM``, or null without it

Change log (fields are only ever added within ``perflab.report/1``):
  1 — first version.
  scaling — added (``perflab report ID --scaling PARAM``); comparison.sweeps — added.
"""

from __future__ import annotations

import json
import math
from typing import Any

from perflab import __version__
from perflab.report.blocks import Details, Para, Plot, Section
from perflab.report.document import Report
from perflab.report.json_export import scaling_document, to_document

SCHEMA = "perflab.report/1"


def _text(p: Para) -> str:
    return "".join(s.text for s in p.spans).strip()


def _plots(blocks) -> list[dict]:
    out = []
    for b in blocks:
        if isinstance(b, Plot):
            out.append({"key": b.key, "title": b.title, "caption": b.caption, "alt": b.alt})
        elif isinstance(b, (Section, Details)):
            out += _plots(b.blocks)
    return out


def to_report_document(r: Report) -> dict[str, Any]:
    env = r.runs.environment
    return {
        "schema": SCHEMA,
        "perflab_version": __version__,
        "generated_at": r.generated_at,
        "title": r.title,
        "description": r.description,
        "meta": list(r.meta),
        "verdict": [_text(p) for p in r.verdict],
        "comparison": to_document(r.result),
        "experiments": [
            {
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
            }
            for e in r.experiments
        ],
        "colors": dict(r.colors),
        "runs": [
            {
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
            for p in r.runs.runs
        ],
        "failed_runs": [
            {
                "run": f.run,
                "experiment": f.experiment_id,
                "cell": f.cell_key,
                "variant": f.variant,
                "repetition": f.repetition,
                "status": f.status,
                "reason": f.reason,
            }
            for f in r.runs.failed
        ],
        "latency_spectra": [
            {
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
            for s in r.runs.spectra
        ],
        "numeric_params": r.runs.numeric_params,
        "environment": None
        if env is None
        else {
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
        },
        "outputs": [
            {
                "variant": o.variant,
                "run": o.run,
                "experiment": o.experiment_id,
                "cell": o.cell_key,
                "name": o.name,
                "text": o.text,
                "truncated": o.truncated,
            }
            for o in r.runs.outputs
        ],
        "reproduce": [{"what": what, "command": cmd} for what, cmd in r.reproduce],
        "sections": [{"id": s.id, "title": s.title, "plots": _plots(s.blocks)} for s in r.sections],
        "scaling": scaling_document(r.scaling) if r.scaling is not None else None,
    }


def render_report_json(r: Report) -> str:
    return json.dumps(_clean(to_report_document(r)), indent=2, ensure_ascii=False) + "\n"


def _clean(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x
