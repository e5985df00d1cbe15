"""A monitor series summarized as metrics, and drawn as rates over time.

Summaries over the whole phase (first sample to last): a counter becomes a per-second
rate, a gauge its mean over the samples. Their names, used as ``monitor = "…"`` in a
``[[metric]]``:

  vmstat.KEY_per_s           a /proc/vmstat total per second (pgfault, pgmajfault, pgscan_kswapd,
                             pgsteal_direct, workingset_refault_file, …); vmstat.NR_KEY: mean (pages)
  meminfo.KEY_kib            mean of a /proc/meminfo line in KiB (MemAvailable_kib, Active_anon_kib …)
  psi.RES.some_pct/full_pct  share of the phase's time (%) that some / all tasks stalled on
                             RES (cpu, memory, io), from PSI's ``total`` (exact, not avg10)
  cpu.FIELD_pct              share of all CPUs' time in user, nice, system, idle, iowait, irq,
                             softirq, steal; cpu.util_pct = 100 − idle − iowait; cpuN.…: CPU N
  cpu.ctxt_per_s, cpu.intr_per_s, cpu.forks_per_s; cpu.procs_running, cpu.procs_blocked (means)
  net.IFACE.rx_bytes_per_s   per interface: rx/tx _bytes, _packets, _errs, _drop per second;
                             net.all.… sums every interface but lo
"""

from __future__ import annotations

import itertools
import re
import statistics

from perflab.observe.monitors import MonitorSeries
from perflab.observe.proc_sources import CPU_FIELDS, NET_FIELDS, SOURCES, is_counter

#: The shape of each source's summary names (checked when the spec loads).
NAME_SHAPES: dict[str, re.Pattern[str]] = {
    "vmstat": re.compile(r"vmstat\.[a-z0-9_]+"),
    "meminfo": re.compile(r"meminfo\.[A-Za-z0-9_]+"),
    "psi": re.compile(r"psi\.(cpu|memory|io|irq)\.(some|full)_pct"),
    "cpu": re.compile(
        r"cpu[0-9]*\.(util|" + "|".join(CPU_FIELDS) + r")_pct"
        r"|cpu\.(ctxt_per_s|intr_per_s|forks_per_s|procs_running|procs_blocked)"
    ),
    "net": re.compile(r"net\.[A-Za-z0-9_]+\.(" + "|".join(NET_FIELDS) + r")_per_s"),
}
_EXAMPLES = {
    "vmstat": "vmstat.pgfault_per_s",
    "meminfo": "meminfo.MemAvailable_kib",
    "psi": "psi.memory.some_pct",
    "cpu": "cpu.util_pct",
    "net": "net.all.rx_bytes_per_s",
}


def source_of(name: str) -> str:
    """The source a summary name comes from: ``cpu3.util_pct`` → ``cpu``."""
    head = name.split(".", 1)[0]
    return "cpu" if re.fullmatch(r"cpu[0-9]*", head) else head


def name_problem(name: str, sources: list[str] | None) -> str | None:
    """Why ``name`` is not a summary a phase monitoring ``sources`` can give (None: it is);
    ``sources`` None: the phase is not monitored."""
    source = source_of(name)
    if source not in SOURCES:
        return f"'{name}' is not a monitor summary (sources: {', '.join(SOURCES)}; e.g. {_EXAMPLES['vmstat']})"
    if sources is None:
        return f"'{name}' needs a monitor on its phase"
    if source not in sources:
        return f"'{name}' needs the monitor source '{source}', which is not enabled"
    if not NAME_SHAPES[source].fullmatch(name):
        return f"'{name}' is not a {source} summary (e.g. {_EXAMPLES[source]})"
    return None


def summarize(series: MonitorSeries) -> dict[str, float]:
    """Every summary of ``series`` by name (rates of counters, means of gauges)."""
    out: dict[str, float] = {}
    for source in series.sources:
        points = series.values(source)
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            continue
        (t0, first), (t1, last) = points[0], points[-1]
        span = t1 - t0
        if source == "psi":
            for key in last.keys() & first.keys():
                out[f"psi.{key}_pct"] = 100.0 * (last[key] - first[key]) / (span * 1e6)
        elif source == "cpu":
            out.update(_cpu(first, last, points, span))
        elif source == "net":
            out.update(_net(first, last, span))
        else:
            for key in last.keys() & first.keys():
                if is_counter(source, key):
                    out[f"{source}.{key}_per_s"] = (last[key] - first[key]) / span
                else:
                    values = [p[key] for _, p in points if key in p]
                    out[f"{source}.{key}"] = statistics.fmean(values)
    return out


def _cpu(
    first: dict[str, float],
    last: dict[str, float],
    points: list[tuple[float, dict[str, float]]],
    span: float,
) -> dict[str, float]:
    out: dict[str, float] = {}
    cpus = {k.split(".", 1)[0] for k in last if "." in k}
    for cpu in cpus:
        delta = {f: last.get(f"{cpu}.{f}", 0.0) - first.get(f"{cpu}.{f}", 0.0) for f in CPU_FIELDS}
        total = sum(delta.values())
        if total <= 0:
            continue
        for f in CPU_FIELDS:
            out[f"{cpu}.{f}_pct"] = 100.0 * delta[f] / total
        out[f"{cpu}.util_pct"] = 100.0 * (total - delta["idle"] - delta["iowait"]) / total
    for key in ("ctxt", "intr", "forks"):
        if key in first and key in last:
            out[f"cpu.{key}_per_s"] = (last[key] - first[key]) / span
    for key in ("procs_running", "procs_blocked"):
        values = [p[key] for _, p in points if key in p]
        if values:
            out[f"cpu.{key}"] = statistics.fmean(values)
    return out


def _net(first: dict[str, float], last: dict[str, float], span: float) -> dict[str, float]:
    out: dict[str, float] = {}
    total: dict[str, float] = {}
    for key in last.keys() & first.keys():
        iface, _, field = key.rpartition(".")
        rate = (last[key] - first[key]) / span
        out[f"net.{iface}.{field}_per_s"] = rate
        if iface != "lo":
            total[field] = total.get(field, 0.0) + rate
    out.update({f"net.all.{f}_per_s": v for f, v in total.items()})
    return out


#: What the report draws of each source: (label, unit, keys summed; counters as rates).
HEADLINES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "vmstat": [
        ("page faults", "/s", ("pgfault",)),
        ("major faults", "/s", ("pgmajfault",)),
        ("pages scanned", "/s", ("pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged")),
        ("pages reclaimed", "/s", ("pgsteal_kswapd", "pgsteal_direct", "pgsteal_khugepaged")),
        ("refaults", "/s", ("workingset_refault_anon", "workingset_refault_file")),
    ],
    "meminfo": [("available memory", "MiB", ("MemAvailable_kib",))],
    "psi": [
        ("memory pressure (some)", "%", ("memory.some",)),
        ("io pressure (some)", "%", ("io.some",)),
        ("cpu pressure (some)", "%", ("cpu.some",)),
    ],
    "cpu": [("CPU utilization", "%", ("cpu.util",))],
    "net": [("network received", "B/s", ("rx_bytes",)), ("network sent", "B/s", ("tx_bytes",))],
}


def headline_series(
    series: MonitorSeries, source: str, keys: tuple[str, ...]
) -> list[tuple[float, float]]:
    """(t, value) of one headline quantity: counters as the rate over each interval (at its
    midpoint), gauges as sampled; [] when the series lacks it."""
    points = series.values(source)
    out: list[tuple[float, float]] = []
    for (ta, a), (tb, b) in itertools.pairwise(points):
        dt = tb - ta
        if dt <= 0:
            continue
        if source == "cpu":
            da = {f: b.get(f"cpu.{f}", 0.0) - a.get(f"cpu.{f}", 0.0) for f in CPU_FIELDS}
            total = sum(da.values())
            if total > 0:
                out.append(((ta + tb) / 2, 100.0 * (total - da["idle"] - da["iowait"]) / total))
        elif source == "net":
            v = sum(
                b[k] - a[k]
                for k in b
                if k.rpartition(".")[2] in keys and not k.startswith("lo.") and k in a
            )
            out.append(((ta + tb) / 2, v / dt))
        elif source == "psi":
            if all(k in a and k in b for k in keys):
                out.append(((ta + tb) / 2, sum(100.0 * (b[k] - a[k]) / (dt * 1e6) for k in keys)))
        elif source == "meminfo":
            if all(k in b for k in keys):
                out.append((tb, sum(b[k] for k in keys) / 1024.0))
        elif any(k in a and k in b for k in keys):
            out.append(((ta + tb) / 2, sum(b.get(k, 0.0) - a.get(k, 0.0) for k in keys) / dt))
    return out
