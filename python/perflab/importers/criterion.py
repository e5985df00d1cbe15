"""criterion.rs's saved measurements (``cargo bench`` writes ``target/criterion``).

FILE is a folder: ``target/criterion``, a group's or a benchmark's folder under it. Each
benchmark there has ``<...>/new/benchmark.json`` (its ids and throughput) and, from the
last run, ``sample.json`` (the raw samples: ``iters[i]`` iterations took ``times[i]`` ns)
and ``estimates.json`` (criterion's bootstrap estimates). The raw samples are preferred:
each is one sample, metric ``time`` = times[i] / iters[i] in ns per iteration (better
lower), and, for a benchmark with a ``throughput``, ``bytes_per_sec`` (B/s) or
``elements_per_sec`` (elem/s), better higher. Without ``sample.json`` the estimates are one
sample with ``mean``, ``median``, ``slope``, ``std_dev`` and ``median_abs_dev`` (their
point estimates, ns): a single run, no interval from it.

Mapping: ``benchmark`` = ``group_id`` (``lookup``, or a lone ``bench_function``'s name),
``function`` = ``function_id`` and ``parameter`` = ``value_str`` (``BenchmarkId::new(
"binary", 100)`` → function ``binary``, parameter ``100``), where the benchmark has them.
"""

from __future__ import annotations

from pathlib import Path

from perflab.errors import InputError
from perflab.importers.model import Sample, ToolFile
from perflab.importers.reading import Node, read_json

_ESTIMATES = ("mean", "median", "slope", "std_dev", "median_abs_dev")
#: criterion's throughput kinds → (metric, unit).
_THROUGHPUT = {
    "Bytes": ("bytes_per_sec", "B/s"),
    "BytesDecimal": ("bytes_per_sec", "B/s"),
    "Elements": ("elements_per_sec", "elem/s"),
}


def read(path: Path) -> ToolFile:
    try:
        if not path.exists():
            raise InputError(f"criterion folder not found: {path}")
        if not path.is_dir():
            raise InputError(f"{path}: criterion results are a folder (target/criterion)")
        runs = _runs(path)
    except OSError as e:
        raise InputError(f"cannot read {e.filename or path}: {e.strerror or e}") from None
    except ValueError as e:  # a NUL character in the path
        raise InputError(f"cannot read {str(path)!r}: {e}") from None
    if not runs:
        raise InputError(
            f"{path}: no criterion benchmarks here (no */new/ folders with benchmark.json)"
        )
    better: dict[str, str] = {}
    samples: list[Sample] = []
    for new in runs:
        samples += _benchmark(new, better)
    return ToolFile(path, samples, better)


def _runs(root: Path) -> list[Path]:
    """The ``new`` folders of the benchmarks under ``root`` (``root`` itself when it is
    one), in path order; ``report`` folders are criterion's HTML."""
    if root.name == "new":
        return [root]
    found = [
        p
        for p in root.rglob("new")
        if p.is_dir() and "report" not in p.relative_to(root).parts
        if any((p / f).exists() for f in ("benchmark.json", "sample.json", "estimates.json"))
    ]
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def _benchmark(new: Path, better: dict[str, str]) -> list[Sample]:
    bench_file = new / "benchmark.json"
    if not bench_file.exists():
        raise InputError(f"{bench_file}: missing (criterion writes it beside sample.json)")
    bench = read_json(bench_file)
    labels = {"benchmark": bench.get("group_id").text()}
    for key, name in (("function_id", "function"), ("value_str", "parameter")):
        node = bench.opt(key)
        if node is not None:
            labels[name] = node.text()
    throughput = _throughput(bench.opt("throughput"))
    if (new / "sample.json").exists():
        return _samples(read_json(new / "sample.json"), labels, throughput, better)
    if (new / "estimates.json").exists():
        return [_estimates(read_json(new / "estimates.json"), labels, better)]
    raise InputError(f"{new}: neither sample.json nor estimates.json (is the run complete?)")


def _throughput(node: Node | None) -> tuple[str, str, float] | None:
    """(metric, unit, amount per iteration) of a benchmark's throughput, or None."""
    if node is None:
        return None
    obj = node.object()
    if len(obj) != 1 or next(iter(obj)) not in _THROUGHPUT:
        raise node.error(f"expected one of {', '.join(_THROUGHPUT)} with an amount")
    kind = next(iter(obj))
    metric, unit = _THROUGHPUT[kind]
    return metric, unit, node.get(kind).number()


def _samples(
    doc: Node,
    labels: dict[str, str],
    throughput: tuple[str, str, float] | None,
    better: dict[str, str],
) -> list[Sample]:
    iters, times = doc.get("iters"), doc.get("times")
    n, t = iters.numbers(), times.numbers()
    if len(n) != len(t):
        raise times.error(f"{len(t)} times for {len(n)} iteration counts")
    if not n:
        raise iters.error("no samples")
    better.setdefault("time", "lower")
    if throughput:
        better.setdefault(throughput[0], "higher")
    out = []
    for i, (count, total) in enumerate(zip(n, t, strict=True)):
        if count <= 0 or total <= 0:
            raise iters.error(f"sample {i}: {count:g} iterations in {total:g} ns")
        values, units = {"time": total / count}, {"time": "ns"}
        if throughput:
            metric, unit, amount = throughput
            values[metric], units[metric] = amount * count / (total * 1e-9), unit
        out.append(Sample(f"{times.file}: {times.at}[{i}]", labels, {}, values, units))
    return out


def _estimates(doc: Node, labels: dict[str, str], better: dict[str, str]) -> Sample:
    values = {k: doc.get(k).get("point_estimate").number() for k in _ESTIMATES if doc.has(k)}
    if not values:
        raise doc.error(f"none of {', '.join(_ESTIMATES)}")
    for k in values:
        better.setdefault(k, "lower")
    return Sample(f"{doc.file}: $", labels, {}, values, dict.fromkeys(values, "ns"))
