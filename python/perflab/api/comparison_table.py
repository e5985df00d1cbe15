"""`Store.compare`'s result: what `perflab compare` computes, as a typed table — its rows
as dataclasses, `to_frame()` for pandas, ``_repr_html_`` for notebooks (the report's own
TLDR and summary tables).

The options are the command's (`perflab.api.comparing.CompareKwargs`), as keyword
arguments: the analysis itself is `perflab.analysis.compare.compare_dataset`, the same
function the command calls, so the numbers are the command's to the last digit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from perflab.analysis.compare import CompareResult


@dataclass(frozen=True)
class ComparisonRow:
    """One candidate variant against the baseline, in one cell, for one metric.

    estimate, low, high: the change and its interval — fractions (0.143 = +14.3%) on the
    ``ratio`` and ``relative`` scales, the metric's own unit on the ``absolute`` scale (a
    baseline within its noise of zero); NaN where a side has no successful run. p: the
    unadjusted p-value; p_adjusted: after the multiple-comparison correction (equal with
    ``correction="none"``). significant: the (corrected) interval excludes no change.
    verdict: ``better``, ``worse``, ``ns``, ``within_noise`` or ``undefined``.
    """

    cell: str
    labels: dict[str, str]
    variant: str
    baseline: str
    metric: str
    unit: str
    better: str
    n_baseline: int
    n_variant: int
    baseline_location: float
    variant_location: float
    estimate: float
    low: float
    high: float
    p: float
    p_adjusted: float
    significant: bool
    verdict: str
    method: str
    statistic: str
    interval: str
    scale: str
    confidence: float
    correction: str


#: `ComparisonResult.to_frame()`'s columns after the matrix parameters (``experiment`` first).
ROW_DTYPES = {
    "cell": "str",
    "variant": "str",
    "baseline": "str",
    "metric": "str",
    "unit": "str",
    "better": "str",
    "n_baseline": "int64",
    "n_variant": "int64",
    "baseline_location": "float64",
    "variant_location": "float64",
    "estimate": "float64",
    "low": "float64",
    "high": "float64",
    "p": "float64",
    "p_adjusted": "float64",
    "significant": "bool",
    "verdict": "str",
    "method": "str",
    "statistic": "str",
    "interval": "str",
    "scale": "str",
    "confidence": "float64",
    "correction": "str",
}

#: Scoped styles of ``_repr_html_``: the report's verdict colours, nothing of the notebook's.
_STYLE = (
    "<style>"
    ".perflab-compare .better{color:#1a7f37;font-weight:600}"
    ".perflab-compare .worse{color:#cf222e;font-weight:600}"
    ".perflab-compare .noise{color:#9a6700}"
    ".perflab-compare .ns,.perflab-compare .na{color:#57606a}"
    ".perflab-compare td .word{font-size:11px;margin-left:6px;text-transform:uppercase}"
    ".perflab-compare .table-title{font-weight:600;padding:4px 0 6px}"
    ".perflab-compare td.num,.perflab-compare th.num{text-align:right}"
    ".perflab-compare .meta{color:#57606a;font-size:90%}"
    "</style>"
)


class ComparisonResult:
    """A comparison of every candidate variant with the baseline, per cell and metric.

    ``rows``: one `ComparisonRow` per cell × metric × candidate (the TLDR table's cells);
    ``notes``: the warnings, one line each; ``correction_statement``: what the
    multiple-comparison correction controlled; ``analysis``: the underlying
    `perflab.analysis.compare.CompareResult` (summaries, the geometric mean across cells).
    """

    def __init__(self, analysis: CompareResult):
        from perflab.report.tables import note_lines

        self.analysis = analysis
        data = analysis.dataset
        self.experiment_id: int = data.experiment.id
        self.experiment_name: str = data.experiment.name
        self.baseline: str = data.baseline
        self.params: list[str] = list(data.params)
        self.method: str = analysis.method
        self.confidence: float = analysis.confidence
        self.threshold: float = analysis.threshold
        self.correction: str = analysis.correction
        self.correction_statement: str = analysis.correction_statement
        self.notes: list[str] = note_lines(analysis)
        self.rows: list[ComparisonRow] = [self._row(c) for c in analysis.comparisons]

    def _row(self, c: Any) -> ComparisonRow:
        k, a, nan = c.comparison, self.analysis, math.nan
        return ComparisonRow(
            cell=c.cell_key,
            labels=dict(c.labels),
            variant=c.variant,
            baseline=self.baseline,
            metric=c.metric.name,
            unit=c.metric.unit,
            better=c.metric.better,
            n_baseline=k.n_baseline if k else 0,
            n_variant=k.n_candidate if k else 0,
            baseline_location=k.baseline_location if k else nan,
            variant_location=k.candidate_location if k else nan,
            estimate=k.estimate if k else nan,
            low=k.low if k else nan,
            high=k.high if k else nan,
            p=k.p_raw if k else nan,
            p_adjusted=k.p_value if k else nan,
            significant=bool(k.significant) if k else False,
            verdict=c.verdict.value,
            method=k.method if k else a.method,
            statistic=k.statistic if k else "",
            interval=k.interval if k else "",
            scale=k.scale if k else "",
            confidence=k.confidence if k else a.confidence,
            correction=k.correction if k else a.correction,
        )

    @property
    def significant(self) -> list[ComparisonRow]:
        """The rows whose (corrected) interval excludes no change."""
        return [r for r in self.rows if r.significant]

    def to_frame(self) -> pd.DataFrame:
        """One row per cell × metric × candidate: experiment, one column per matrix
        parameter (``param:NAME`` where a name is taken), then `ComparisonRow`'s fields
        (the labels as the parameter columns)."""
        from perflab.api.frames import frame, param_columns

        names = param_columns(self.params, ["experiment", *ROW_DTYPES])
        dtypes = {"experiment": "int64", **{names[p]: "str" for p in self.params}, **ROW_DTYPES}
        cols: dict[str, list[Any]] = {name: [] for name in dtypes}
        for r in self.rows:
            cols["experiment"].append(self.experiment_id)
            for p in self.params:
                cols[names[p]].append(r.labels.get(p))
            for name in ROW_DTYPES:
                cols[name].append(getattr(r, name))
        return frame(cols, dtypes)

    def to_markdown(self) -> str:
        """`perflab compare ID --format markdown`."""
        from perflab.report.markdown import render_compare_markdown

        return render_compare_markdown(self.analysis)

    def to_csv(self) -> str:
        """`perflab compare ID --format csv` (the sweep rows included)."""
        from perflab.report.csv_table import render_csv

        return render_csv(self.analysis)

    def _repr_html_(self) -> str:
        """The TLDR table, the summaries and the warnings as the HTML report draws them."""
        from perflab.report.html import _section  # the report's renderer of a section
        from perflab.report.tables import compare_section

        def no_plot(_: object) -> bytes:  # a comparison's section holds no plot
            raise AssertionError("a comparison section has no plot")

        return f'<div class="perflab-compare">{_STYLE}{_section(compare_section(self.analysis), no_plot)}</div>'

    def __repr__(self) -> str:
        found = len(self.significant)
        return (
            f"<perflab comparison of experiment {self.experiment_id} ({self.experiment_name!r}): "
            f"{len(self.rows)} comparisons vs {self.baseline!r}, {found} significant; "
            f"{self.method}, {self.confidence:.0%}, correction {self.correction}>"
        )
