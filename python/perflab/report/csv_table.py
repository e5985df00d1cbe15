"""CSV: one row per comparison (cell × candidate variant × metric), numbers unformatted."""

from __future__ import annotations

import csv
import io

from perflab.analysis.compare import CompareResult
from perflab.report.format import tldr_text


def render_csv(result: CompareResult) -> str:
    data = result.dataset
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(data.params) + ["cell", "variant", "baseline", "metric", "unit", "better", "method",
                                    "confidence", "n_baseline", "n_variant", "baseline_mean",
                                    "variant_mean", "change_pct", "ci_low_pct", "ci_high_pct",
                                    "p_value", "verdict", "tldr"])
    for c in result.comparisons:
        k = c.comparison
        nums = ([k.n_baseline, k.n_candidate, k.baseline_location, k.candidate_location,
                 k.estimate * 100, k.low * 100, k.high * 100, k.p_value] if k else [""] * 8)
        w.writerow([c.labels.get(p, "") for p in data.params] +
                   [c.cell_key, c.variant, data.baseline, c.metric.name, c.metric.unit, c.metric.better,
                    result.method, result.confidence] + nums + [c.verdict.value,
                                                                 tldr_text(k, c.verdict)])
    return buf.getvalue()
