"""Taking a metric's value out of a finished phase: harness measurements, a JSON
path in the output, a regex, the phase parser's (or kv load's) named values, a perf
counter, or a monitor summary."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from perflab.spec.schema import MetricSpec, regex_value_group


class MetricExtractionError(Exception):
    """A metric could not be read from a run's output (the run is recorded as failed)."""


@dataclass(frozen=True)
class PhaseOutput:
    """What a measured phase produced, in the shape metric extraction needs."""

    stdout: str
    stderr: str
    harness: dict[str, float]  # wall_time, user_time, system_time, cpu_time, max_rss
    named: dict[str, float]  # parser or kv output
    counters: dict[str, float] = field(default_factory=dict)  # perf event → count (+ ipc)
    monitor: dict[str, float] = field(default_factory=dict)  # monitor summaries by name


def overhead_key(phase: str, command: str) -> str:
    """Where an overhead command's output is kept among the run's phase outputs."""
    return f"overhead:{phase}:{command}"


def extract(metric: MetricSpec, out: PhaseOutput) -> float:
    if metric.harness is not None:
        value = _harness(metric.harness, out)
    elif metric.json_path is not None:
        value = _json_value(metric, metric.json_path, out)
    elif metric.regex is not None:
        value = _regex_value(metric, metric.regex, out)
    elif metric.counter is not None:
        value = _observed(metric, metric.counter, out.counters, "counter")
    elif metric.monitor is not None:
        value = _observed(metric, metric.monitor, out.monitor, "monitor summary")
    else:
        key = metric.field or metric.name
        if key in out.named:
            value = out.named[key]
        elif metric.field is None and metric.name in out.harness:
            value = out.harness[metric.name]
        else:
            avail = ", ".join(sorted(out.named)) or "none"
            raise MetricExtractionError(
                f"metric '{metric.name}': no value '{key}' in the phase output (available: {avail})"
            )
    value = float(value) * float(metric.scale)
    if not math.isfinite(value):
        raise MetricExtractionError(f"metric '{metric.name}' is not a finite number ({value})")
    return value


def _harness(name: str, out: PhaseOutput) -> float:
    if name not in out.harness:
        raise MetricExtractionError(f"harness metric '{name}' was not measured for this phase")
    return out.harness[name]


def _observed(metric: MetricSpec, key: str, values: dict[str, float], what: str) -> float:
    """A counter or monitor summary by name; missing: which of its kind there are."""
    if key in values:
        return values[key]
    import difflib

    close = difflib.get_close_matches(key, list(values), n=3)
    near = f" (closest: {', '.join(close)})" if close else ""
    raise MetricExtractionError(
        f"metric '{metric.name}': no {what} '{key}' from this phase{near}"
        if values
        else f"metric '{metric.name}': the phase gave no {what}s"
    )


def _stream(metric: MetricSpec, out: PhaseOutput) -> str:
    return out.stdout if metric.stream == "stdout" else out.stderr


def _json_value(metric: MetricSpec, path: str | list[str | int], out: PhaseOutput) -> float:
    """The number at ``path`` (the metric's ``json``) in the metric's stream."""
    text = _stream(metric, out)
    doc = _parse_json(text)
    if doc is None:
        raise MetricExtractionError(f"metric '{metric.name}': {metric.stream} is not JSON")
    parts: list[Any] = path if isinstance(path, list) else _split_path(path)
    cur = doc
    for part in parts:
        try:
            if isinstance(cur, list):
                cur = cur[int(part)]
            else:
                cur = cur[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise MetricExtractionError(
                f"metric '{metric.name}': JSON path {_show(parts)} not found at {part!r}"
            ) from None
    if isinstance(cur, bool) or not isinstance(cur, (int, float, str)):
        raise MetricExtractionError(
            f"metric '{metric.name}': JSON value at {_show(parts)} is not a number"
        )
    try:
        return float(cur)
    except ValueError:
        raise MetricExtractionError(f"metric '{metric.name}': {cur!r} is not a number") from None


def _parse_json(text: str) -> Any:
    """The whole stream as JSON, else the last JSON object in it (after other lines)."""
    from perflab.workloads.parsers.embedded_json import last_object

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return last_object(text)


def _split_path(path: str) -> list[str]:
    """``a.b[0].c`` → ['a', 'b', '0', 'c']; a key with dots is written in a list instead."""
    parts: list[str] = []
    for piece in path.split("."):
        m = re.fullmatch(r"([^\[\]]*)((?:\[\d+\])*)", piece)
        if not m:
            parts.append(piece)
            continue
        if m.group(1):
            parts.append(m.group(1))
        parts.extend(re.findall(r"\[(\d+)\]", m.group(2)))
    return parts


def _show(parts: list[Any]) -> str:
    return ".".join(str(p) for p in parts)


def _regex_value(metric: MetricSpec, regex: str, out: PhaseOutput) -> float:
    """The value group of the last match of ``regex`` (the metric's) in the metric's stream."""
    group = regex_value_group(regex)
    matches = list(re.finditer(regex, _stream(metric, out), re.MULTILINE))
    if not matches:
        raise MetricExtractionError(
            f"metric '{metric.name}': regex found no match in {metric.stream}"
        )
    text = matches[-1].group(group)
    try:
        return float(text)
    except (TypeError, ValueError):
        raise MetricExtractionError(
            f"metric '{metric.name}': regex matched {text!r}, not a number"
        ) from None
