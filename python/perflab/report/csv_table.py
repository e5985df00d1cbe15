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

from perflab.analysis.compare import CompareResult
from perflab.report.format import tldr_text


def render_csv(result: CompareResult) -> str:
    data = result.dataset
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(data.params) + ["cell", "variant", "baseline", "metric", "unit", "better", "method",
                                    "confidence", "n_baseline", "n_variant", "baseline_mean",
                                    "variant_mean", "change_pct", "ci_low_pct", "ci_high_pct",
                                    "p_value", "verdict", "tldr", "cells", "i_squared"])
    for c in result.comparisons:
        k = c.comparison
        nums = ([k.n_baseline, k.n_candidate, k.baseline_location, k.candidate_location,
                 k.estimate * 100, k.low * 100, k.high * 100, k.p_value] if k else [""] * 8)
        w.writerow([c.labels.get(p, "") for p in data.params] +
                   [c.cell_key, c.variant, data.baseline, c.metric.name, c.metric.unit, c.metric.better,
                    result.method, result.confidence] + nums + [c.verdict.value,
                                                                 tldr_text(k, c.verdict), "", ""])
    for s in result.sweeps:
        k = s.comparison
        w.writerow([""] * len(data.params) +
                   [s.label, s.variant, data.baseline, s.metric.name, s.metric.unit, s.metric.better, "sweep",
                    result.confidence, k.n_baseline, k.n_candidate, "", "", k.estimate * 100, k.low * 100,
                    k.high * 100, "", s.verdict.value, tldr_text(k, s.verdict), s.summary.cells,
                    s.summary.i_squared])
    return buf.getvalue()
