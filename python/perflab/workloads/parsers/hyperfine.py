"""hyperfine's ``--export-json`` document (alone, or after its human output on stdout).

``{"results": [{"command", "mean", "stddev", "median", "user", "system", "min", "max",
"times": [...], "exit_codes": [...], "memory_usage_byte": [...]?, "parameters": {...}?}]}``,
every time in seconds; ``stddev`` is null for a single run.

The document is read here once, into `Benchmark`s (`read_benchmarks`): the parser of a
command phase that runs hyperfine takes their summaries, and ``perflab import --format
hyperfine`` (`perflab.importers.hyperfine`) their runs.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Benchmark:
    """One command of a hyperfine document: ``at`` its JSON path (``$.results[k]``), its
    command line and ``-P``/``-L`` parameters, each run's time (s), exit status (0 for
    every run when the file has none; -1 killed by a signal) and peak memory (bytes,
    hyperfine ≥ 1.17), and the file's own summaries (``mean_s``, …: `METRICS`)."""

    at: str
    command: str
    parameters: dict[str, str]
    times: list[float] | None
    exit_codes: list[int]
    memory: list[float] | None
    summary: dict[str, float]


def read_benchmarks(doc: Any) -> list[Benchmark]:
    """The benchmarks of a hyperfine document; a ParseError naming the JSON path of what
    is wrong (``$.results[1].times[3]: expected a number of seconds, found 'x'``)."""
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise ParseError("$.results: no list of benchmarks")
    if not results:
        raise ParseError("$.results: no commands")
    return [_benchmark(r, f"$.results[{k}]") for k, r in enumerate(results)]


def _benchmark(result: Any, at: str) -> Benchmark:
    if not isinstance(result, dict):
        raise ParseError(f"{at}: expected a benchmark object, found {result!r:.40}")
    command = result.get("command")
    if not isinstance(command, str):
        raise ParseError(f"{at}.command: expected a string, found {command!r:.40}")
    params = result.get("parameters") or {}
    if not isinstance(params, dict):
        raise ParseError(f"{at}.parameters: expected an object")
    summary = {}
    for key, metric in _FIELDS.items():
        value = json_number(result.get(key), f"{at}.{key}", "a number of seconds")
        if value is not None:
            summary[metric] = value
    if "mean_s" not in summary:
        raise ParseError(f"{at}: no 'mean' time")
    times = _numbers(result, "times", at)
    runs = len(times) if times is not None else None
    codes = result.get("exit_codes")
    if codes is None:
        exit_codes = [0] * (runs or 0)
    elif isinstance(codes, list):
        exit_codes = [_exit_code(c, f"{at}.exit_codes[{i}]") for i, c in enumerate(codes)]
    else:
        raise ParseError(f"{at}.exit_codes: expected an array")
    memory = _numbers(result, "memory_usage_byte", at)
    for name, column in (("exit_codes", exit_codes), ("memory_usage_byte", memory)):
        if runs is not None and column is not None and len(column) != runs:
            raise ParseError(f"{at}.{name}: {len(column)} values for {runs} runs")
    parameters = {str(k): str(v) for k, v in params.items()}
    return Benchmark(at, command, parameters, times, exit_codes, memory, summary)


def _numbers(result: dict[str, Any], key: str, at: str) -> list[float] | None:
    raw = result.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ParseError(f"{at}.{key}: expected an array")
    out = []
    for i, v in enumerate(raw):
        x = json_number(v, f"{at}.{key}[{i}]")
        if x is None:
            raise ParseError(f"{at}.{key}[{i}]: not a finite number")
        out.append(x)
    return out


def _exit_code(raw: object, at: str) -> int:
    if raw is None:
        return -1  # hyperfine writes null for a run killed by a signal
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ParseError(f"{at}: expected an exit status, found {raw!r:.40}")
    return raw


def _metrics(bench: Benchmark) -> dict[str, float]:
    out = dict(bench.summary)
    if bench.times is not None:
        out["runs"] = float(len(bench.times))
    out["failed_runs"] = float(sum(1 for c in bench.exit_codes if c != 0))
    return out


def prefixes(benchmarks: list[Benchmark]) -> list[str]:
    """Distinct, readable metric prefixes for several benchmarks (see METRICS)."""

    def by_parameters(b: Benchmark) -> str:
        return slug("_".join(f"{k}_{v}" for k, v in b.parameters.items()))

    for naming in (by_parameters, lambda b: slug(b.command)):
        names = [naming(b) for b in benchmarks]
        if all(names) and len(set(names)) == len(names):
            return names
    return [f"cmd{k}" for k in range(1, len(benchmarks) + 1)]


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
        try:
            benchmarks = read_benchmarks(doc)
        except ParseError as e:
            raise ParseError(f"{NAME}: {e}") from None
        if len(benchmarks) == 1:
            return _metrics(benchmarks[0])
        out: dict[str, float] = {}
        for prefix, bench in zip(prefixes(benchmarks), benchmarks):
            out.update({f"{prefix}_{m}": v for m, v in _metrics(bench).items()})
        return out
