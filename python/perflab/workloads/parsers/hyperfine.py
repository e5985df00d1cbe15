"""hyperfine's ``--export-json`` document (alone, or after its human output on stdout).

``{"results": [{"command", "mean", "stddev", "median", "user", "system", "min", "max",
"times": [...], "exit_codes": [...], "parameters": {...}?}]}``, every time in seconds;
``stddev`` is null for a single run.
"""

from __future__ import annotations

from typing import Any

from perflab.workloads.parsers.base import MetricDoc, ParseError, Parser, json_number
from perflab.workloads.parsers.embedded_json import find_object
from perflab.workloads.parsers.names import slug

NAME = "hyperfine"

_FIELDS = {
    "mean": "mean_s",
    "stddev": "stddev_s",
    "median": "median_s",
    "min": "min_s",
    "max": "max_s",
    "user": "user_s",
    "system": "system_s",
}

METRICS = (
    MetricDoc("mean_s", "s", "mean wall time of the benchmarked command"),
    MetricDoc("stddev_s", "s", "standard deviation of its wall time (absent with one run)"),
    MetricDoc("median_s", "s", "median wall time"),
    MetricDoc("min_s", "s", "fastest run"),
    MetricDoc("max_s", "s", "slowest run"),
    MetricDoc("user_s", "s", "mean user CPU time"),
    MetricDoc("system_s", "s", "mean system CPU time"),
    MetricDoc("runs", "runs", "number of timed runs (len(times))"),
    MetricDoc("failed_runs", "runs", "runs with a non-zero exit code (with --ignore-failure)"),
    MetricDoc(
        "<command>_<metric>",
        "as above",
        "with several commands, each metric is prefixed by the command's name made a "
        "slug ('slow one' → slow_one_mean_s); for a --parameter-scan/-L run, by its "
        "parameters ('n=2' → n_2_mean_s); when names are empty or collide, by "
        "cmd<k>_ with k its 1-based position (hyperfine's 'Benchmark k')",
    ),
)


def _number(raw: object, where: str) -> float | None:
    return json_number(raw, f"{NAME}: {where}", "a number of seconds")


def _result_metrics(result: dict[str, Any], where: str) -> dict[str, float]:
    out = {}
    for key, metric in _FIELDS.items():
        if (v := _number(result.get(key), f"{where} {key!r}")) is not None:
            out[metric] = v
    if "mean_s" not in out:
        raise ParseError(f"{NAME}: {where}: no 'mean' time")
    times = result.get("times")
    if isinstance(times, list):
        out["runs"] = float(len(times))
    codes = result.get("exit_codes")
    if isinstance(codes, list):
        out["failed_runs"] = float(sum(1 for c in codes if c not in (0, None)))
    return out


def prefixes(results: list[dict[str, Any]]) -> list[str]:
    """Distinct, readable metric prefixes for several results (see METRICS)."""

    def by_parameters(r: dict[str, Any]) -> str:
        params = r.get("parameters")
        if not isinstance(params, dict) or not params:
            return ""
        return slug("_".join(f"{k}_{v}" for k, v in params.items()))

    for naming in (by_parameters, lambda r: slug(str(r.get("command", "")))):
        names = [naming(r) for r in results]
        if all(names) and len(set(names)) == len(names):
            return names
    return [f"cmd{k}" for k in range(1, len(results) + 1)]


class HyperfineParser(Parser):
    name = NAME
    summary = "hyperfine's --export-json document (one or several commands)"
    metrics = METRICS

    def parse(self, text: str) -> dict[str, float]:
        doc = find_object(text, lambda d: isinstance(d.get("results"), list))
        if doc is None:
            raise ParseError(
                f"{NAME}: no JSON object with a 'results' list found (expected the "
                "output of hyperfine --export-json FILE, e.g. --export-json /dev/stdout)"
            )
        results = doc["results"]
        if not results or not all(isinstance(r, dict) for r in results):
            raise ParseError(f"{NAME}: 'results' holds no benchmark objects")
        if len(results) == 1:
            return _result_metrics(results[0], "results[0]")
        out: dict[str, float] = {}
        for k, (prefix, result) in enumerate(zip(prefixes(results), results)):
            out.update(
                {f"{prefix}_{m}": v for m, v in _result_metrics(result, f"results[{k}]").items()}
            )
        return out
