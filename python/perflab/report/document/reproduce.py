"""The commands that give a report again: rerun or show each experiment, the comparison
and the scaling fit in the terminal, and this report — with the options that changed it."""

from __future__ import annotations

import re
import shlex

from perflab.analysis.comparison_table import ComparisonTable
from perflab.analysis.scaling import ScalingResult
from perflab.records import ExperimentRow


def reproduce_commands(
    store_path: str | None,
    result: ComparisonTable,
    experiments: list[ExperimentRow],
    scaling: ScalingResult | None = None,
) -> list[tuple[str, str]]:
    """(what it does, command line), in the order to run them; ``store_path``: the
    store's, when it is not the default one (None: no ``--store`` option needed)."""
    store_opt = f" --store {shlex.quote(str(store_path))}" if store_path is not None else ""
    commands = [c for e in experiments if (c := _source_command(e, store_opt)) is not None]
    opts = _statistics_args(result, experiments)
    ids = " ".join(str(e.id) for e in experiments)
    pairs = result.dataset.experiment.settings.get("cross", {}).get("pairs", [])
    if pairs and any(a != b for a, b in pairs):
        opts += "".join(f" --variant {shlex.quote(a if a == b else f'{a}={b}')}" for a, b in pairs)
    commands.append(("the comparison, in the terminal", f"perflab compare {ids}{opts}{store_opt}"))
    if scaling is not None:
        same = " ".join(
            f"--{o} {v}" for o, v in re.findall(r"--(confidence|threshold) (\S+)", opts)
        )
        commands.append(
            (
                "the scaling fit, in the terminal",
                f"perflab compare {ids}{_scaling_args(scaling)}{' ' + same if same else ''}{store_opt}",
            )
        )
    commands.append(
        (
            "this report",
            f"perflab report {ids}{opts}{_scaling_args(scaling)}{store_opt} -o report.html",
        )
    )
    return commands


def _statistics_args(result: ComparisonTable, experiments: list[ExperimentRow]) -> str:
    """The options of ``perflab compare`` that differ from the defaults."""
    opts = ""
    if result.method != "auto":
        opts += f" --method {result.method}"
    if abs(result.confidence - float(experiments[-1].settings.get("confidence", 0.95))) > 1e-12:
        opts += f" --confidence {result.confidence:g}"
    if result.threshold:
        opts += f" --threshold {result.threshold * 100:g}%"
    across = result.dataset.experiment.settings.get("across")
    if isinstance(across, dict):
        opts += " --across " + shlex.quote(f"{across['param']}={across['value']}")
    return opts


def _source_command(e: ExperimentRow, store_opt: str) -> tuple[str, str] | None:
    """How experiment ``e`` came about: run its spec again, or show the import."""
    if e.source == "run" and e.spec_path:
        return (
            (
                f"run experiment {e.id} again (a new experiment; `perflab show {e.id} --spec` "
                "prints the spec as it was)"
            ),
            f"perflab run {shlex.quote(e.spec_path)} --new{store_opt}",
        )
    if e.source == "import":
        return (
            f"experiment {e.id} was imported from {e.settings.get('imported_from', 'a CSV file')}",
            f"perflab show {e.id}{store_opt}",
        )
    return None


def _scaling_args(fit: ScalingResult | None) -> str:
    if fit is None:
        return ""
    o = fit.options
    out = f" --scaling {shlex.quote(o.param)}"
    if o.exponent is not None:
        out += f" --exponent {o.exponent:g}"
    if o.at is not None:
        out += f" --at {o.at:g}"
    return out + "".join(f" --metric {shlex.quote(m)}" for m in o.metrics)
