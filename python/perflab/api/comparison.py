"""`Store.compare`: what `perflab compare` computes, as a typed result — its rows as
dataclasses, `to_frame()` for pandas, ``_repr_html_`` for notebooks (the report's own
TLDR and summary tables).

The options are the command's (`perflab compare --help`), as keyword arguments: the
analysis itself is `perflab.analysis.compare.compare_dataset`, the same function the
command calls, so the numbers are the command's to the last digit.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from perflab.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from perflab.analysis.compare import CompareResult

#: The choices of the options argparse restricts for the command.
INTERVALS = ("auto", "difference", "fieller")
SCALES = ("auto", "ratio", "shift")
#: A method's own option names that method (`--interval fieller` alone means Welch).
OPTION_OWNER = {
    "interval": "welch",
    "statistic": "bootstrap",
    "resamples": "bootstrap",
    "scale": "mannwhitney",
}


@dataclass(frozen=True)
class CompareOptions:
    """How to compare: `perflab compare`'s statistics options, checked."""

    method: str = "auto"
    method_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    confidence: float | None = None
    threshold: float = 0.0  # fraction
    correction: str = "holm"
    diagnostics: bool | None = None

    def analysis_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `compare_dataset` / `compare_cross`."""
        return {
            "method": self.method,
            "method_options": dict(self.method_options),
            "confidence": self.confidence,
            "threshold": self.threshold,
            "correction": self.correction,
            "diagnostics": self.diagnostics,
        }


class CompareKwargs(TypedDict, total=False):
    """`perflab compare`'s statistics options as keyword arguments, declared once: what
    `compare_options` and `perflab.api.lab.Store.compare` take (defaults: `compare_options`)."""

    method: str  # auto, welch, bootstrap, mannwhitney, paired
    confidence: float | None  # default: the experiment's, 0.95
    threshold: float | str  # a fraction (0.01) or a percentage as text ("1%")
    correction: str  # holm, bonferroni, bh, none
    interval: str | None  # Welch's: auto, difference, fieller
    statistic: str | None  # the bootstrap's
    resamples: int | None  # the bootstrap's
    scale: str | None  # Mann-Whitney's: auto, ratio, shift
    diagnostics: bool | None  # per-cell diagnostics (default: on for small tables)


def compare_options(**given: Unpack[CompareKwargs]) -> CompareOptions:
    """The options checked as the command checks them (InputError, one line, otherwise)."""
    method = given.get("method", "auto")
    confidence = given.get("confidence")
    interval, statistic = given.get("interval"), given.get("statistic")
    resamples, scale = given.get("resamples"), given.get("scale")
    if confidence is not None and not (
        isinstance(confidence, (int, float)) and 0.5 < confidence < 1
    ):
        raise InputError(f"confidence must be between 0.5 and 1, e.g. 0.95 (got {confidence!r})")
    if interval is not None and interval not in INTERVALS:
        raise InputError(f"interval {interval!r}: choose from {', '.join(INTERVALS)}")
    if scale is not None and scale not in SCALES:
        raise InputError(f"scale {scale!r}: choose from {', '.join(SCALES)}")
    from perflab.stats.bootstrap import MIN_RESAMPLES

    if resamples is not None and (
        isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < MIN_RESAMPLES
    ):
        raise InputError(f"resamples must be a whole number ≥ {MIN_RESAMPLES} (got {resamples!r})")
    method_options = {
        k: v
        for k, v in (
            ("interval", interval),
            ("statistic", statistic),
            ("resamples", resamples),
            ("scale", scale),
        )
        if v is not None
    }
    if method == "auto" and method_options:
        method = OPTION_OWNER[next(iter(method_options))]
    return CompareOptions(
        method,
        method_options,
        confidence,
        _threshold(given.get("threshold", 0.0)),
        given.get("correction", "holm"),
        given.get("diagnostics"),
    )


def _threshold(value: float | str) -> float:
    """A fraction ≥ 0 from ``0.01`` or ``"1%"``."""
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
        try:
            x = float(text.removesuffix("%")) / 100
        except ValueError:
            raise InputError(f"threshold {value!r}: not a percentage (e.g. '1%')") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
        if x >= 1:
            raise InputError(
                f"threshold {value!r}: a fraction below 1 (0.01 = 1%), or a percentage as text ('1%')"
            )
    else:
        raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
    if not (math.isfinite(x) and x >= 0):
        raise InputError(f"threshold {value!r}: must be ≥ 0")
    return x


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
