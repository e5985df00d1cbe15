"""`perflab history NAME --format json`: the history as one JSON document, schema
``perflab.history/1`` (NaN and infinities written as null).

Schema ``perflab.history/1``:

  schema             "perflab.history/1"
  perflab_version    version of perflab that wrote it
  name               the experiments' name
  confidence         level of each version's interval, in (0, 1)
  change_confidence  level of the change points' search and intervals, in (0, 1)
  min_effect         the change points' guard, a fraction (0.005 = ±0.5%)
  params             [str]: the matrix parameters of the cells
  versions           [{label, version, experiments[int], commit, repo, created_at}], in
                     series order; ``version`` null (label ``#ID``) for an experiment without
                     one; ``created_at`` Unix seconds of its first experiment
  series             [{metric{name,unit,better}, cell, labels{param: label}, variant,
                     points[{version, n, mean, low, high, median, stddev, min, max}]: one per
                     version that has runs of the series, in the metric's unit (low/high: the
                     mean's t interval at ``confidence``, null for one run),
                     change_points[{before, after, estimate, low, high, scale, p_value,
                     p_detection, verdict, detail}]: the changes between versions ``before``
                     and ``after`` (labels); on the ``ratio`` and ``relative`` scales
                     estimate/low/high are fractions (−0.079 = −7.9%), on ``absolute`` in
                     the metric's unit; ``p_detection`` the search's permutation p-value,
                     ``p_value`` the change's Mann–Whitney one; ``detail`` the detector's
                     whole record (`ChangePoint.to_dict`, indices counting the series'
                     points), changes{…}: `ChangePoints.to_dict` (method, rejected splits,
                     warnings)}]
  warnings           [{code, message, details}]

Change log (fields are only ever added within ``perflab.history/1``): none yet.
"""

from __future__ import annotations

from typing import Any

import orjson

from perflab._version import __version__
from perflab.analysis.version_series import Change, History, Series

HISTORY_SCHEMA = "perflab.history/1"


def history_document(history: History) -> dict[str, Any]:
    return {
        "schema": HISTORY_SCHEMA,
        "perflab_version": __version__,
        "name": history.name,
        "confidence": history.confidence,
        "change_confidence": history.change_confidence,
        "min_effect": history.min_effect,
        "params": list(history.params),
        "versions": [
            {
                "label": v.label,
                "version": v.version,
                "experiments": list(v.experiments),
                "commit": v.commit,
                "repo": v.repo,
                "created_at": v.created_at,
            }
            for v in history.versions
        ],
        "series": [_series(history, s) for s in history.series],
        "warnings": [w.to_dict() for w in history.warnings],
    }


def _series(history: History, s: Series) -> dict[str, Any]:
    m = s.metric
    return {
        "metric": {"name": m.name, "unit": m.unit, "better": m.better},
        "cell": s.cell_key,
        "labels": s.labels,
        "variant": s.variant,
        "points": [
            {
                "version": history.versions[i].label,
                "n": p.n,
                "mean": p.mean,
                "low": p.ci_low,
                "high": p.ci_high,
                "median": p.median,
                "stddev": p.stddev,
                "min": p.min,
                "max": p.max,
            }
            for i in s.present
            if (p := s.points[i]) is not None
        ],
        "change_points": [_change(c) for c in s.found],
        "changes": s.changes.to_dict(),
    }


def _change(c: Change) -> dict[str, Any]:
    k = c.point.comparison
    return {
        "before": c.before,
        "after": c.after,
        "estimate": k.estimate,
        "low": k.low,
        "high": k.high,
        "scale": k.scale,
        "p_value": k.p_value,
        "p_detection": c.point.p_detection,
        "verdict": c.point.verdict.value,
        "detail": c.point.to_dict(),
    }


def render_history_json(history: History) -> str:
    """The document as indented JSON text, ending in a newline."""
    options = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
    return orjson.dumps(history_document(history), option=options).decode()
