"""Pure statistics over numbers: no files, processes, database or formatting.

Every method implements the same small interface (`Method`): ``summary`` of one
sample and ``compare`` of a candidate sample against a baseline sample. Results
are frozen dataclasses whose fields carry units and invariants in their
docstrings; warnings are typed data attached to them (see `warnings.py`).

Methods (one file each, docstring = assumption and why): `auto` (the default: Welch
where a cell's runs look clean, Mann–Whitney where they are outlying or skewed), `welch` (option
``interval="fieller"``), `bootstrap` (BCa, any statistic), `mannwhitney`
(Hodges–Lehmann), `paired` (blocked runs), `devices` (runs on several devices: the change
within each, combined; `device_spread` reports how far each device sits from the others);
`histogram` bootstraps merged-histogram percentiles. Around them: `classify` (verdict with a practical threshold),
`correction` (Holm/BH/Bonferroni over a family), `diagnostics` and `power`
(actionable warnings), `sweep` (geometric-mean ratio over cells), `adaptive`
(when to stop repeating), `overhead` (subtract a measured overhead), `scaling`
(cost = a + b·n^k fits). Each method also has a batched form (``*_batch``) over
arrays of E experiments, used by bulk comparisons and by the simulation tests.

One definition of the change for every method (`intervals.py`, ``Comparison.scale``):
a ratio for runs that are all positive (its interval built on the ratio: never below
−100%); for runs that can be zero or negative the difference over |baseline location|,
or in the metric's unit when that location is within its own noise of zero (flagged by
an ``absolute_change`` warning). One rule of agreement for every method and correction:
significant ⇔ the interval excludes 0 ⇔ p ≤ α (the adjusted p under a correction;
``Comparison.p_raw`` keeps the raw one) — each method's p-value inverts the very test its
interval is made of, at every level. Every method rescales values first, so runs of
1e-300 and of 1e300 give the same relative intervals; what cannot be computed comes back
as NaN with a warning saying why, never as an exception.

Method-specific caveats (too few runs for this method, ties, unbounded ratio) are
attached by ``compare``; data diagnostics (outliers, drift, bimodality, first run,
unequal variances, power) come from `diagnose_sample` / `diagnose_comparison`,
which need what only the caller knows (execution order, better direction).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.stats import auto
    from perflab.stats.adaptive import Decision, Precision, decide, relative_half_width
    from perflab.stats.auto import Auto, Choice, choose, choose_many
    from perflab.stats.bootstrap import Bootstrap
    from perflab.stats.correction import (
        FamilyResult,
        adjust_p_values,
        compare_family,
        correct,
    )
    from perflab.stats.device_offsets import DeviceOffset, DeviceSpread, device_spread
    from perflab.stats.devices import Devices, device_batch
    from perflab.stats.diagnostics import (
        SampleDiagnostics,
        Trend,
        diagnose_comparison,
        diagnose_sample,
        outlier_indices,
    )
    from perflab.stats.histogram import HistogramBootstrap, histogram_bootstrap, merged_percentile
    from perflab.stats.mannwhitney import MannWhitney
    from perflab.stats.methods import DEFAULT_METHOD, Method, available_methods, get_method
    from perflab.stats.options import CORRECTIONS, DEFAULT_CORRECTION
    from perflab.stats.overhead import NetTime, compare_net, subtract_overhead
    from perflab.stats.paired import Paired
    from perflab.stats.power import detectable_change, runs_needed, welch_power
    from perflab.stats.scaling import (
        Estimate,
        ScalingComparison,
        ScalingFit,
        compare_scaling,
        fit_scaling,
    )
    from perflab.stats.summary import Location, Summary, summarize
    from perflab.stats.sweep import SweepSummary, sweep_summary
    from perflab.stats.types import SCALES, Comparison, Verdict, classify
    from perflab.stats.warnings import StatWarning
    from perflab.stats.welch import Welch

#: Where each name lives: a module is imported when one of its names is first used, so
#: that a command needing the default method does not import the bootstrap, the scaling
#: fits and the rest (`perflab compare` starts ~20 ms sooner).
_WHERE = {
    "Auto": "perflab.stats.auto",
    "Bootstrap": "perflab.stats.bootstrap",
    "CORRECTIONS": "perflab.stats.options",
    "Choice": "perflab.stats.auto",
    "Comparison": "perflab.stats.types",
    "DEFAULT_CORRECTION": "perflab.stats.options",
    "DEFAULT_METHOD": "perflab.stats.methods",
    "Decision": "perflab.stats.adaptive",
    "DeviceOffset": "perflab.stats.device_offsets",
    "DeviceSpread": "perflab.stats.device_offsets",
    "Devices": "perflab.stats.devices",
    "Estimate": "perflab.stats.scaling",
    "FamilyResult": "perflab.stats.correction",
    "HistogramBootstrap": "perflab.stats.histogram",
    "Location": "perflab.stats.summary",
    "MannWhitney": "perflab.stats.mannwhitney",
    "Method": "perflab.stats.methods",
    "NetTime": "perflab.stats.overhead",
    "Paired": "perflab.stats.paired",
    "Precision": "perflab.stats.adaptive",
    "SCALES": "perflab.stats.types",
    "SampleDiagnostics": "perflab.stats.diagnostics",
    "ScalingComparison": "perflab.stats.scaling",
    "ScalingFit": "perflab.stats.scaling",
    "StatWarning": "perflab.stats.warnings",
    "Summary": "perflab.stats.summary",
    "SweepSummary": "perflab.stats.sweep",
    "Trend": "perflab.stats.diagnostics",
    "Verdict": "perflab.stats.types",
    "Welch": "perflab.stats.welch",
    "adjust_p_values": "perflab.stats.correction",
    "auto": "perflab.stats.auto",
    "available_methods": "perflab.stats.methods",
    "choose": "perflab.stats.auto",
    "choose_many": "perflab.stats.auto",
    "classify": "perflab.stats.types",
    "compare_family": "perflab.stats.correction",
    "compare_net": "perflab.stats.overhead",
    "compare_scaling": "perflab.stats.scaling",
    "correct": "perflab.stats.correction",
    "decide": "perflab.stats.adaptive",
    "detectable_change": "perflab.stats.power",
    "device_batch": "perflab.stats.devices",
    "device_spread": "perflab.stats.device_offsets",
    "diagnose_comparison": "perflab.stats.diagnostics",
    "diagnose_sample": "perflab.stats.diagnostics",
    "fit_scaling": "perflab.stats.scaling",
    "get_method": "perflab.stats.methods",
    "histogram_bootstrap": "perflab.stats.histogram",
    "merged_percentile": "perflab.stats.histogram",
    "outlier_indices": "perflab.stats.diagnostics",
    "relative_half_width": "perflab.stats.adaptive",
    "runs_needed": "perflab.stats.power",
    "subtract_overhead": "perflab.stats.overhead",
    "summarize": "perflab.stats.summary",
    "sweep_summary": "perflab.stats.sweep",
    "welch_power": "perflab.stats.power",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'perflab.stats' has no attribute {name!r}")
    if module == f"perflab.stats.{name}":
        return importlib.import_module(module)
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CORRECTIONS",
    "DEFAULT_CORRECTION",
    "DEFAULT_METHOD",
    "SCALES",
    "Auto",
    "Bootstrap",
    "Choice",
    "Comparison",
    "Decision",
    "DeviceOffset",
    "DeviceSpread",
    "Devices",
    "Estimate",
    "FamilyResult",
    "HistogramBootstrap",
    "Location",
    "MannWhitney",
    "Method",
    "NetTime",
    "Paired",
    "Precision",
    "SampleDiagnostics",
    "ScalingComparison",
    "ScalingFit",
    "StatWarning",
    "Summary",
    "SweepSummary",
    "Trend",
    "Verdict",
    "Welch",
    "adjust_p_values",
    "auto",
    "available_methods",
    "choose",
    "choose_many",
    "classify",
    "compare_family",
    "compare_net",
    "compare_scaling",
    "correct",
    "decide",
    "detectable_change",
    "device_batch",
    "device_spread",
    "diagnose_comparison",
    "diagnose_sample",
    "fit_scaling",
    "get_method",
    "histogram_bootstrap",
    "merged_percentile",
    "outlier_indices",
    "relative_half_width",
    "runs_needed",
    "subtract_overhead",
    "summarize",
    "sweep_summary",
    "welch_power",
]
