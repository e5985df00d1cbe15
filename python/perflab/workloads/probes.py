"""Platform probes: run the native microbenchmarks (or a user's CoreMark) and name
their results as metrics with units, ready for the store and the performance model.

Metric names (all per single pinned core; values are medians over repeats):

======================================  ============  =========================================
name                                    unit          what
======================================  ============  =========================================
``cpu_iter_per_sec``                    iterations/s  perflab's own integer workload (not CoreMark)
``coremark_per_core``                   iterations/s  CoreMark's Iterations/Sec (``coremark=PATH``),
                                                      divided by its thread count
``memmove_<case>_mib_per_sec``          MiB/s         mmbm case: ``small_no_miss``, ``small_tlbmiss``,
                                                      ``large_no_miss``, ``large_cachemiss``,
                                                      ``large_allmiss``
``memmove_mib_per_sec``                 MiB/s         = ``memmove_small_tlbmiss_mib_per_sec``, the
                                                      case the router performance-index
                                                      experiment's model uses (mmbm's default)
``memmove_sweep_<S>b_<N>buf_mib_per_sec`` MiB/s       sweep cell: S-byte copies over N buffers
``latency_<order>_<size>_ns``           ns/access     pointer chase; order ``page`` or ``random``,
                                                      size such as ``4k``, ``2m``, ``1g``
======================================  ============  =========================================
"""

from __future__ import annotations

import math
import os
import platform as _platform
import re
import subprocess
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from perflab.errors import InputError, PerflabError
from perflab.stats import StatWarning, Summary, summarize

#: Version of the JSON written by `ProbeResult.to_json`; bump on incompatible change.
#: 1: first version.
SCHEMA_VERSION = 1

PROBES = ("cpu", "memmove", "latency")

#: A probe whose thread was on its CPU less than this fraction of wall time was preempted.
MIN_ON_CPU_FRACTION = 0.95

_DEFAULTS: dict[str, dict[str, Any]] = {
    "cpu": {"duration": 1.0, "coremark": None, "coremark_args": (), "timeout": 600.0},
    "memmove": {
        "duration": 0.5,
        "cases": None,
        "sweep": False,
        "sweep_sizes": None,
        "sweep_buffers": None,
        "sweep_duration": 0.1,
        "huge_pages": False,
    },
    "latency": {
        "duration": 0.1,
        "min_size": 4096,
        "max_size": 1 << 30,
        "points_per_octave": 1,
        "orders": ("page", "random"),
        "huge_pages": False,
        "seed": 1,
    },
}


def _native() -> ModuleType:
    try:
        from perflab import _native
    except ImportError as e:  # pragma: no cover - a broken install
        raise PerflabError(
            f"the native module is missing ({e})", hint="run scripts/setup"
        ) from None
    return _native


#: A memmove sweep's metric: copy size and buffer count in its name.
_SWEEP_METRIC = re.compile(r"^memmove_sweep_(\d+)b_(\d+)buf_mib_per_sec$")


@dataclass
class ProbeResult:
    """Results of one probe invocation: every repeat's value of every metric.

    samples: metric name → one value per repeat, in ``units[name]``.
    raw:     the native measurements as returned (seconds, cpu_seconds, counts, core…).
    """

    probe: str
    core: int | None
    repeat: int
    options: dict[str, Any]
    samples: dict[str, list[float]]
    units: dict[str, str]
    raw: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[StatWarning] = field(default_factory=list)
    host: dict[str, str] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """Median of each metric over repeats (the median resists a preempted repeat)."""
        return {name: float(np.median(v)) for name, v in self.samples.items()}

    def summaries(self, confidence: float = 0.95) -> dict[str, Summary]:
        return {name: summarize(v, confidence) for name, v in self.samples.items()}

    def memmove_cases(self) -> dict[str, tuple[int, int]]:
        """mmbm's memmove cases, as this result's table lists them: name → (copy size in
        bytes, buffer count)."""
        return memmove_cases()

    def sweep_table(self) -> tuple[list[int], list[int], dict[tuple[int, int], float]]:
        """A memmove sweep as (copy sizes, buffer counts, (size, buffers) → median MiB/s)."""
        cells: dict[tuple[int, int], float] = {}
        for name, value in self.metrics().items():
            m = _SWEEP_METRIC.match(name)
            if m:
                cells[(int(m.group(1)), int(m.group(2)))] = value
        sizes = sorted({s for s, _ in cells})
        bufs = sorted({b for _, b in cells})
        return sizes, bufs, cells

    def latency_table(self) -> list[tuple[int, dict[str, float]]]:
        """A latency probe as [(working-set bytes, {order: median ns/access})] in size order."""
        rows: dict[int, dict[str, float]] = {}
        med = self.metrics()
        for r in self.raw:
            rows.setdefault(r["size_bytes"], {})[r["order"]] = med[r["metric"]]
        return sorted(rows.items())

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "probe": self.probe,
            "core": self.core,
            "repeat": self.repeat,
            "options": {k: list(v) if isinstance(v, tuple) else v for k, v in self.options.items()},
            "host": self.host,
            "metrics": self.metrics(),
            "units": self.units,
            "summaries": {k: s.to_dict() for k, s in self.summaries().items()},
            "samples": self.samples,
            "raw": self.raw,
            "warnings": [w.to_dict() for w in self.warnings],
        }


def run_probe(name: str, *, core: int | None = None, repeat: int = 5, **opts: Any) -> ProbeResult:
    """Runs probe ``name`` (``cpu``, ``memmove`` or ``latency``) ``repeat`` times.

    core:   pin the probe's thread to this core (its affinity is restored afterwards).
    opts:   per probe — cpu: ``duration`` (s per repeat), ``coremark`` (path of a CoreMark
            binary to run instead), ``coremark_args``, ``timeout``;
            memmove: ``duration`` (s per case), ``cases`` (names), ``sweep``,
            ``sweep_sizes``/``sweep_buffers`` (bytes / counts), ``sweep_duration`` (s per
            sweep cell, default 0.1), ``huge_pages``;
            latency: ``duration`` (s per point), ``min_size``/``max_size`` (bytes),
            ``points_per_octave``, ``orders`` (``page``/``random``), ``huge_pages``, ``seed``.
    """
    if name not in PROBES:
        raise InputError(f"unknown probe {name!r}: choose one of {', '.join(PROBES)}")
    if not isinstance(repeat, int) or repeat < 1:
        raise InputError(f"repeat must be a positive integer, not {repeat!r}")
    if core is not None:
        _check_core(core)
    unknown = sorted(set(opts) - set(_DEFAULTS[name]))
    if unknown:
        raise InputError(
            f"probe {name}: unknown option(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(_DEFAULTS[name]))})"
        )
    options = {**_DEFAULTS[name], **{k: v for k, v in opts.items() if v is not None}}
    duration = float(options["duration"])
    if not (0 < duration <= 3600):
        raise InputError(f"duration {duration} s: must be in (0, 3600] seconds")
    runner = {"cpu": _run_cpu, "memmove": _run_memmove, "latency": _run_latency}[name]
    try:
        result = runner(core, repeat, options)
    except ValueError as e:  # the native layer's argument errors
        raise InputError(f"probe {name}: {e}") from None
    except RuntimeError as e:  # a failed self-validation: the numbers must not be used
        raise PerflabError(f"probe {name}: {e}") from None
    except MemoryError as e:
        raise PerflabError(f"probe {name}: {e}", hint="use a smaller size") from None
    result.host = host_info()
    result.warnings.extend(_preemption_warnings(result.raw))
    return result


def phase_metrics(
    options: dict[str, Any], *, core: int | None = None
) -> tuple[dict[str, float], dict[str, str]]:
    """A probe as one phase of a run: ``options`` is the phase's table, e.g.
    ``{"name": "memmove", "case": ["small_tlbmiss"], "duration": 1.0}`` (``name`` picks the
    probe, ``repeat`` defaults to 1 since the experiment repeats runs; the other keys are
    `run_probe`'s options, ``case`` also accepted for ``cases``). Returns (metric → value,
    metric → unit); the values are medians over the phase's repeats.
    """
    opts = dict(options)
    name = opts.pop("name", None)
    if name is None:
        raise InputError(f"probe phase needs a probe name: name = {' | '.join(PROBES)}")
    repeat = opts.pop("repeat", 1)
    if "case" in opts:
        case = opts.pop("case")
        opts["cases"] = [case] if isinstance(case, str) else list(case)
    if "pages" in opts:
        pages = opts.pop("pages")
        if pages not in ("base", "huge"):
            raise InputError(f"probe phase: pages = {pages!r}: use 'base' or 'huge'")
        opts["huge_pages"] = pages == "huge"
    result = run_probe(str(name), core=core, repeat=int(repeat), **opts)
    return result.metrics(), dict(result.units)


# ---------------------------------------------------------------------------- cpu


def _run_cpu(core: int | None, repeat: int, o: dict[str, Any]) -> ProbeResult:
    if o["coremark"]:
        return _run_coremark_repeats(str(o["coremark"]), core, repeat, o)
    raw = _native().probe_cpu(float(o["duration"]), repeat, core)
    return ProbeResult(
        "cpu",
        core,
        repeat,
        o,
        {"cpu_iter_per_sec": [r["iter_per_sec"] for r in raw]},
        {"cpu_iter_per_sec": "iterations/s"},
        raw,
    )


@dataclass(frozen=True)
class CoremarkScore:
    """A validated CoreMark run: ``iterations_per_sec`` over ``threads`` threads."""

    iterations_per_sec: float
    threads: int
    total_seconds: float
    iterations: int

    @property
    def per_core(self) -> float:
        return self.iterations_per_sec / self.threads


_CM_RATE = re.compile(r"^\s*Iterations/Sec\s*:\s*([0-9.eE+]+)\s*$", re.M)
_CM_TIME = re.compile(r"^\s*Total time \(secs\)\s*:\s*([0-9.eE+]+)\s*$", re.M)
_CM_ITER = re.compile(r"^\s*Iterations\s*:\s*(\d+)\s*$", re.M)
_CM_THREADS = re.compile(r"^\s*Parallel \w+\s*:\s*(\d+)\s*$", re.M)
_CM_VALID = "Correct operation validated"


def parse_coremark(text: str) -> CoremarkScore:
    """The score of a CoreMark run's output; InputError unless it validated its run."""
    if _CM_VALID not in text:
        reason = next(
            (
                ln.strip()
                for ln in text.splitlines()
                if re.search(r"error|cannot validate|must execute", ln, re.I)
            ),
            "",
        )
        raise InputError(
            "CoreMark output does not report a validated run "
            f"(no '{_CM_VALID}' line{': ' + reason if reason else ''})",
            hint="run CoreMark for at least 10 s with its standard seeds",
        )
    rate = _CM_RATE.search(text)
    if not rate:
        raise InputError("CoreMark output has no 'Iterations/Sec' line")
    secs = _CM_TIME.search(text)
    its = _CM_ITER.search(text)
    threads = _CM_THREADS.search(text)
    score = CoremarkScore(
        iterations_per_sec=float(rate.group(1)),
        threads=int(threads.group(1)) if threads else 1,
        total_seconds=float(secs.group(1)) if secs else math.nan,
        iterations=int(its.group(1)) if its else 0,
    )
    if not (score.iterations_per_sec > 0 and score.threads > 0):
        raise InputError(f"CoreMark reported a non-positive score ({score.iterations_per_sec})")
    return score


def run_coremark(
    path: str, *, core: int | None = None, args: tuple[str, ...] = (), timeout: float = 600.0
) -> tuple[CoremarkScore, str]:
    """Runs a CoreMark binary (pinned to ``core``) and returns its validated score and output."""
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise InputError(f"CoreMark binary {path!r} is not an executable file")
    preexec = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    try:
        proc = subprocess.run(
            [path, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=preexec,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise PerflabError(f"CoreMark {path!r} did not finish within {timeout:g} s") from None
    except OSError as e:
        raise InputError(f"cannot run CoreMark {path!r}: {e.strerror}") from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 and _CM_VALID not in out:
        raise PerflabError(f"CoreMark {path!r} exited with status {proc.returncode}")
    return parse_coremark(out), out


def _run_coremark_repeats(
    path: str, core: int | None, repeat: int, o: dict[str, Any]
) -> ProbeResult:
    raw: list[dict[str, Any]] = []
    for i in range(repeat):
        score, _ = run_coremark(
            path, core=core, args=tuple(o["coremark_args"]), timeout=float(o["timeout"])
        )
        raw.append(
            {
                "round": i,
                "iterations_per_sec": score.iterations_per_sec,
                "threads": score.threads,
                "seconds": score.total_seconds,
                "iterations": score.iterations,
                "core": core,
            }
        )
    return ProbeResult(
        "cpu",
        core,
        repeat,
        o,
        {"coremark_per_core": [r["iterations_per_sec"] / r["threads"] for r in raw]},
        {"coremark_per_core": "iterations/s"},
        raw,
    )


# ---------------------------------------------------------------------------- memmove


def memmove_cases() -> dict[str, tuple[int, int]]:
    """mmbm's cases: name → (copy size in bytes, buffer count)."""
    return {n: (s, b) for n, s, b in _native().probe_memmove_cases()}


def _run_memmove(core: int | None, repeat: int, o: dict[str, Any]) -> ProbeResult:
    known = memmove_cases()
    names = list(o["cases"]) if o["cases"] else list(known)
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(f"unknown memmove case(s) {', '.join(bad)} (known: {', '.join(known)})")
    groups: list[tuple[list[tuple[str, int, int]], float]] = [
        ([(f"memmove_{n}_mib_per_sec", *known[n]) for n in names], float(o["duration"]))
    ]
    if o["sweep"]:
        dsizes, dbufs = _native().probe_memmove_sweep_grid()
        sizes = list(o["sweep_sizes"] or dsizes)
        bufs = list(o["sweep_buffers"] or dbufs)
        sweep_duration = float(o["sweep_duration"])
        if not 0 < sweep_duration <= 3600:
            raise InputError(f"sweep duration {sweep_duration} s: must be in (0, 3600] seconds")
        groups.append(
            (
                [(f"memmove_sweep_{s}b_{b}buf_mib_per_sec", s, b) for s in sizes for b in bufs],
                sweep_duration,
            )
        )
    samples: dict[str, list[float]] = {}
    raw: list[dict[str, Any]] = []
    for cells, duration in groups:
        out = _native().probe_memmove(
            [(s, b) for _, s, b in cells], duration, repeat, core, bool(o["huge_pages"])
        )
        for i, r in enumerate(out):
            name = cells[i % len(cells)][0]
            r["metric"] = name
            samples.setdefault(name, []).append(r["mib_per_sec"])
        raw += out
    if "memmove_small_tlbmiss_mib_per_sec" in samples:
        samples["memmove_mib_per_sec"] = list(samples["memmove_small_tlbmiss_mib_per_sec"])
    return ProbeResult("memmove", core, repeat, o, samples, dict.fromkeys(samples, "MiB/s"), raw)


# ---------------------------------------------------------------------------- latency


def size_label(n: int) -> str:
    """4096 → '4k', 3 MiB → '3m', 1 GiB → '1g'; other sizes in bytes ('5760b')."""
    for unit, suffix in ((1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")):
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return f"{n}b"


def _run_latency(core: int | None, repeat: int, o: dict[str, Any]) -> ProbeResult:
    orders = list(o["orders"])
    bad = [x for x in orders if x not in ("page", "random")]
    if bad or not orders:
        raise InputError(
            f"latency order(s) {', '.join(bad) or '(none)'}: use 'page' and/or 'random'"
        )
    sizes = _native().probe_latency_sizes(
        int(o["min_size"]), int(o["max_size"]), int(o["points_per_octave"])
    )
    raw = _native().probe_latency(
        sizes, orders, float(o["duration"]), repeat, core, bool(o["huge_pages"]), int(o["seed"])
    )
    samples: dict[str, list[float]] = {}
    for r in raw:
        name = f"latency_{r['order']}_{size_label(r['size_bytes'])}_ns"
        r["metric"] = name
        samples.setdefault(name, []).append(r["ns_per_access"])
    return ProbeResult(
        "latency", core, repeat, o, samples, dict.fromkeys(samples, "ns/access"), raw
    )


# ---------------------------------------------------------------------------- shared


def host_info() -> dict[str, str]:
    """Host name, CPU model and kernel: enough to tell platforms apart in a model."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "hostname": _platform.node(),
        "cpu_model": model or _platform.processor(),
        "kernel": _platform.release(),
        "machine": _platform.machine(),
    }


def _check_core(core: int) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    if not isinstance(core, int) or core not in allowed:
        raise InputError(
            f"core {core!r} is not available to this process "
            f"(allowed: {', '.join(map(str, allowed))})"
        )


def _preemption_warnings(raw: list[dict[str, Any]]) -> list[StatWarning]:
    fractions = [
        r["cpu_seconds"] / r["seconds"]
        for r in raw
        if r.get("cpu_seconds") is not None
        and r.get("seconds", 0) > 0
        and math.isfinite(r["cpu_seconds"])
    ]
    if not fractions:
        return []
    worst = min(fractions)
    hit = sum(f < MIN_ON_CPU_FRACTION for f in fractions)
    if hit == 0:
        return []
    return [
        StatWarning(
            "preempted",
            f"the probe thread was on its CPU only {worst:.0%} of the time in {hit} of {len(fractions)} "
            "measurement(s): the core is shared with other work; pin to an idle core (--core N) and rerun",
            {"worst_on_cpu_fraction": worst, "measurements_affected": hit},
        )
    ]
