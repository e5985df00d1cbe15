"""`KvResult`: what a key-value load measured, and histogram merging across runs.

The engine hands back one JSON document, format ``perflab-kv-result`` version 1.
It is what perflab stores per run; every field below is part of the format.

Top level
    ``format``, ``version``           "perflab-kv-result", 1
    ``status``                        "complete" | "stopped" (by the caller) | "failed" (see ``error``)
    ``error``                         one-line reason of a failure, or null
    ``mode``                          "closed" | "open"
    ``config``                        the engine configuration, ``seed`` being the one in force
    ``started_unix_s``                wall-clock start (s since the epoch)
    ``warmup_s``, ``duration_s``      warmup length; measured window (end of warmup → last measured reply)
    ``connections``, ``connection_failures``
    ``sets``, ``gets``                counters of the measured window: ``requests`` (answered, hits
                                      and misses included), ``error_replies``, ``lost`` (in flight on
                                      a connection that failed), ``bytes_tx``, ``bytes_rx``,
                                      ``latency_sum_ns``; gets also ``hits``, ``misses``; open loop
                                      also ``latency_sum_uncorrected_ns``
    ``late_requests``, ``unsent_requests``   open loop: sent > late_threshold after their intended
                                      time; due in the window but never sent
    ``unfinished_requests``           measured requests still in flight when the run ended
    ``verify_failures``, ``warmup_requests``, ``error_reply_sample``
    ``errors``                        failed requests of the whole run by kind (see `KvErrors`):
                                      ``total`` (warmup included; the sum of ``by_kind``),
                                      ``measured`` (the metric ``errors``), ``warmup``, ``attempted``
                                      (requests answered or lost), ``by_kind`` {kind: count},
                                      ``examples`` {kind: first message, where it says more}.
                                      Kinds: memcache text — the status line ("SERVER_ERROR object
                                      too large for cache", "CLIENT_ERROR …", "ERROR", "NOT_STORED");
                                      memcache binary — the status by name ("value too large", "out
                                      of memory"; a GET's "key not found" is a miss, not an error);
                                      redis — the error's first word ("OOM", "WRONGTYPE", "ERR");
                                      requests lost with their connection — "connection closed",
                                      "connection error", "response timeout", "invalid reply".
    ``client``                        ``cpu_s``, ``threads`` [{user_s, system_s, wall_s, utilization}],
                                      ``max_rss_kb``, ``rss_kb`` (the load generator's own use),
                                      ``syscalls`` {reads, writes, polls}: socket reads and writes and
                                      event-loop wakeups over the whole run (requests per write shows
                                      how well the pipeline batches)
    ``servers``                       per server: server, address, connections, requests, errors
    ``histograms``                    ``unit`` "ns", ``encoding`` "hdr-v2-deflate-base64",
                                      ``significant_digits`` 3, and ``sets``, ``gets`` (latency from
                                      the intended send time in open loop, the actual one in closed
                                      loop), open loop also ``sets_uncorrected``, ``gets_uncorrected``.
                                      Standard HdrHistogram V2 compressed blobs: any HDR tool reads them.
    ``metrics``                       the flat metrics (`METRICS`), derived from the above
    ``warnings``                      [{code, message}]

Change log: version 1 — first version; ``errors`` added later within version 1 (a document
without it is read as having failed requests of unknown kind, see `KvResult.errors`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

from perflab.workloads.kv_latency import LatencyDistribution

FORMAT = "perflab-kv-result"
VERSION = 1

#: Flat metric names → (unit, meaning). ``sets_*``/``gets_*`` exist for every per-command one.
METRICS: dict[str, tuple[str, str]] = {
    "ops_per_sec": ("1/s", "answered requests per second (sets + gets), memtier's Totals Ops/sec"),
    "hits_per_sec": ("1/s", "GET hits per second"),
    "misses_per_sec": ("1/s", "GET misses per second"),
    "kb_per_sec": ("KiB/s", "bytes sent + received per second / 1024 (memtier's KB/sec)"),
    "avg_latency_ms": ("ms", "mean latency (exact, not from the histogram)"),
    "p50_latency_ms": ("ms", "median latency"),
    "p90_latency_ms": ("ms", "90th percentile latency"),
    "p99_latency_ms": ("ms", "99th percentile latency"),
    "p999_latency_ms": ("ms", "99.9th percentile latency"),
    "max_latency_ms": ("ms", "largest latency"),
    "hit_ratio": ("1", "hits / (hits + misses); absent without GETs"),
    "requests": ("1", "answered requests in the measured window"),
    "duration_s": ("s", "measured window"),
    "errors": (
        "1",
        "requests that failed: error replies plus requests lost with a failed connection",
    ),
    "connection_failures": ("1", "connections that could not be made or broke"),
    "connections": ("1", "connections established"),
    "avg_in_flight_per_connection": (
        "1",
        "requests in flight per connection over the window: Σ latency from send / s / conns",
    ),
    "verify_failures": ("1", "GET hits whose value was not the one written for the key (verify)"),
    "client_cpu_s": ("s", "CPU time of the load generator's threads in the measured window"),
    "client_cpu_us_per_request": ("µs", "client CPU per answered request: the generator's cost"),
    "client_cpu_max_thread_utilization": (
        "1",
        "busiest client thread's CPU / wall time (≥0.9: saturated)",
    ),
    "target_rate_per_sec": ("1/s", "open loop: the rate asked for"),
    "late_requests": (
        "1",
        "open loop: requests sent more than late_threshold after their intended time",
    ),
    "unsent_requests": ("1", "open loop: requests due in the measured window but never sent"),
    "avg_uncorrected_latency_ms": ("ms", "open loop: mean latency from the actual send"),
    "p50_uncorrected_latency_ms": ("ms", "open loop: median latency from the actual send"),
    "p90_uncorrected_latency_ms": ("ms", "open loop: p90 from the actual send"),
    "p99_uncorrected_latency_ms": (
        "ms",
        "open loop: p99 from the actual send (hides coordinated omission)",
    ),
    "p999_uncorrected_latency_ms": ("ms", "open loop: p99.9 from the actual send"),
    "max_uncorrected_latency_ms": ("ms", "open loop: largest latency from the actual send"),
}
for _op in ("sets", "gets"):
    for _name in (
        "ops_per_sec",
        "avg_latency_ms",
        "p50_latency_ms",
        "p90_latency_ms",
        "p99_latency_ms",
        "p999_latency_ms",
        "max_latency_ms",
        "kb_per_sec",
        "errors",
    ):
        _unit, _meaning = METRICS[_name]
        METRICS[f"{_op}_{_name}"] = (_unit, f"{_op[:-1].upper()} only: {_meaning}")
METRICS["gets_hits_per_sec"] = ("1/s", "GET hits per second")
METRICS["gets_misses_per_sec"] = ("1/s", "GET misses per second")


@dataclass(frozen=True)
class KvErrors:
    """Failed requests of a run: error replies and requests lost with their connection."""

    total: int  # warmup included
    measured: int  # in the measured window (the metric ``errors``)
    warmup: int
    attempted: int  # requests answered or lost, warmup included
    by_kind: dict[str, int]  # most frequent first
    examples: dict[str, str]  # a kind's first message, where it says more than the kind

    def describe(self, max_kinds: int = 3) -> str:
        """``SERVER_ERROR object too large for cache (20,000), connection closed (8)``."""
        parts = [f"{kind} ({n:,})" for kind, n in list(self.by_kind.items())[:max_kinds]]
        if len(self.by_kind) > max_kinds:
            parts.append(f"and {len(self.by_kind) - max_kinds} more kind(s)")
        return ", ".join(parts)

    def reason(self, max_kinds: int = 3) -> str:
        """One line: ``20,000 of 20,000 requests failed: SERVER_ERROR object too large for cache (20,000)``,
        with the most common kind's message when it says more (``; e.g. "OOM command not allowed…"``)."""
        text = f"{self.total:,} of {self.attempted:,} requests failed"
        if self.warmup:
            text += f" ({self.warmup:,} in the warmup)"
        if self.by_kind:
            text += ": " + self.describe(max_kinds)
            top = next(iter(self.by_kind))
            if top in self.examples:
                text += f'; e.g. "{self.examples[top]}"'
        return text


class KvResultError(ValueError):
    """A document that is not a perflab-kv-result this version can read."""


@dataclass(frozen=True)
class KvWarning:
    """A remark on a result; ``message`` says what to do about it."""

    code: str
    message: str


def _doc_of(item: Any) -> dict[str, Any]:
    return item.to_json() if isinstance(item, KvResult) else item


def _hist_keys(which: str, uncorrected: bool) -> list[str]:
    if which not in ("sets", "gets", "totals"):
        raise ValueError(f'which must be "sets", "gets" or "totals", not {which!r}')
    ops = ["sets", "gets"] if which == "totals" else [which]
    return [f"{op}_uncorrected" if uncorrected else op for op in ops]


def merge_histograms(
    results: Iterable[Any], which: str = "totals", *, uncorrected: bool = False
) -> LatencyDistribution:
    """Merge the latency histograms of several runs (KvResult objects or their stored JSON).

    ``which``: "sets", "gets" or "totals" (both). ``uncorrected``: open-loop latency from
    the actual send instead of the intended one. Percentiles of the merge are those of all
    requests of all runs together — the right way to pool runs (averaging per-run
    percentiles is not). Pure: reads its inputs, changes nothing.
    """
    merged: HdrHistogram | None = None
    for item in results:
        doc = _doc_of(item)
        hists = doc.get("histograms") or {}
        for key in _hist_keys(which, uncorrected):
            if key not in hists:
                raise KvResultError(
                    f"result has no '{key}' histogram"
                    + (" (uncorrected latency exists only in open loop)" if uncorrected else "")
                )
            h = HdrHistogram.decode(hists[key])
            if merged is None:
                merged = h
            else:
                merged.add(h)
    if merged is None:
        raise ValueError("no results to merge")
    return LatencyDistribution(merged)


class KvResult:
    """One load run. Build it from the engine's JSON (``KvResult(doc)``)."""

    def __init__(self, doc: dict[str, Any]):
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise KvResultError(f"not a {FORMAT} document")
        if doc.get("version") != VERSION:
            raise KvResultError(
                f"{FORMAT} version {doc.get('version')} is not supported (this perflab reads {VERSION})"
            )
        self._doc = doc

    # ----- state ---------------------------------------------------------------------

    @property
    def status(self) -> str:
        """ "complete", "stopped" (by the caller) or "failed" (see `error`)."""
        status: str = self._doc["status"]
        return status

    @property
    def io(self) -> str:
        """The I/O loop that ran: "uring" or "epoll" ("mixed" in a merge of both)."""
        io: str = self._doc.get("io", "epoll")
        return io

    @property
    def ok(self) -> bool:
        """Ran to its end and no request failed (see `errors`)."""
        return self.status == "complete" and self.errors.total == 0

    @property
    def error(self) -> str | None:
        """Why the run is not `ok`, in one line: the fault that ended it, or else its failed
        requests by kind (`KvErrors.reason`); None when nothing failed."""
        if self._doc.get("error"):
            fault: str = self._doc["error"]
            return fault
        errors = self.errors
        return errors.reason() if errors.total else None

    @property
    def errors(self) -> KvErrors:
        """Failed requests of the whole run (warmup included) by kind, most frequent first."""
        e = self._doc.get("errors")
        if e is None:  # written before the kinds were counted
            d = self._doc
            replies = d["sets"]["error_replies"] + d["gets"]["error_replies"]
            lost = d["sets"]["lost"] + d["gets"]["lost"]
            kinds = {
                k: n for k, n in (("error reply", replies), ("lost with its connection", lost)) if n
            }
            sample = d.get("error_reply_sample")
            total = replies + lost
            return KvErrors(
                total,
                total,
                0,
                int(d["metrics"]["requests"]) + total + d.get("warmup_requests", 0),
                kinds,
                {"error reply": sample} if sample and replies else {},
            )
        by_kind = dict(sorted(e["by_kind"].items(), key=lambda kv: (-kv[1], kv[0])))
        return KvErrors(
            int(e["total"]),
            int(e["measured"]),
            int(e["warmup"]),
            int(e["attempted"]),
            {k: int(v) for k, v in by_kind.items()},
            dict(e.get("examples") or {}),
        )

    @property
    def open_loop(self) -> bool:
        return bool(self._doc["mode"] == "open")

    @property
    def seed(self) -> int:
        return int(self._doc["config"]["seed"])

    @property
    def duration_s(self) -> float:
        return float(self._doc["duration_s"])

    @property
    def warnings(self) -> list[KvWarning]:
        return [KvWarning(w["code"], w["message"]) for w in self._doc.get("warnings", [])]

    def metrics(self) -> dict[str, float]:
        """Flat metrics, units in the names (see `METRICS`)."""
        return {k: float(v) for k, v in self._doc["metrics"].items()}

    def to_json(self) -> dict[str, Any]:
        """The whole document (a copy), histograms included."""
        return copy.deepcopy(self._doc)

    def latency(self, which: str = "totals", *, uncorrected: bool = False) -> LatencyDistribution:
        return merge_histograms([self._doc], which, uncorrected=uncorrected)

    # ----- presentation --------------------------------------------------------------

    def format_table(self, percentiles: Sequence[float] = (50, 99, 99.9)) -> str:
        """memtier_benchmark's "ALL STATS" table: Sets/Gets/Totals rows, latencies in ms."""
        d, m = self._doc, self.metrics()
        dur = self.duration_s
        rate = (lambda x: x / dur) if dur > 0 else (lambda x: 0.0)
        heads = [
            "Type",
            "Ops/sec",
            "Hits/sec",
            "Misses/sec",
            "Avg. Latency",
            *[f"{_pname(p)} Latency" for p in percentiles],
            "KB/sec",
        ]
        widths = [6, 12, 12, 12, 15, *[15] * len(percentiles), 12]
        rows = []
        for name, key in (("Sets", "sets"), ("Gets", "gets"), ("Totals", "totals")):
            ops = ["sets", "gets"] if key == "totals" else [key]
            n = sum(d[o]["requests"] for o in ops)
            lat = self.latency(key) if n else None
            avg = sum(d[o]["latency_sum_ns"] for o in ops) / n / 1e6 if n else None
            kb = rate(sum(d[o]["bytes_tx"] + d[o]["bytes_rx"] for o in ops) / 1024)
            hits = None if key == "sets" else rate(d["gets"]["hits"])
            misses = None if key == "sets" else rate(d["gets"]["misses"])
            rows.append(
                [
                    name,
                    f"{rate(n):.2f}",
                    _num(hits, 2),
                    _num(misses, 2),
                    _num(avg, 5),
                    *[_num(lat.percentile_ms(p) if lat else None, 5) for p in percentiles],
                    f"{kb:.2f}",
                ]
            )

        def line(cells: Sequence[str]) -> str:
            first = f"{cells[0]:<{widths[0]}}"
            return " ".join([first] + [f"{c:>{w}}" for c, w in zip(cells[1:], widths[1:])])

        header = line(heads)
        sep = "-" * len(header)
        out = ["ALL STATS", "=" * len(header), header, sep, *[line(r) for r in rows]]
        if m.get("requests", 0) == 0 and self.status != "complete":
            out.append("(no request completed)")
        return "\n".join(out)

    def format_summary(self) -> str:
        """Lines under the table: what ran, errors, the client's own cost, open-loop figures."""
        d, m = self._doc, self.metrics()
        cfg = d["config"]
        lines = [
            f"{d['duration_s']:.2f} s measured"
            + (f" after {d['warmup_s']:g} s warmup" if d["warmup_s"] else "")
            + f", {int(m['requests']):,} requests, {cfg['threads']} thread{'s' if cfg['threads'] != 1 else ''}"
            + f" × {cfg['clients']} connections"
            + (f", pipeline {cfg['pipeline']}" if d["mode"] == "closed" else "")
            + (
                f" ({m['avg_in_flight_per_connection']:.1f} in flight per connection)"
                if "avg_in_flight_per_connection" in m
                else ""
            )
            + f" ({d['mode']} loop), latency in ms",
            f"errors: {_errors_summary(self.errors)}   connection failures: {int(m['connection_failures'])}"
            + (f"   verify failures: {int(m['verify_failures'])}" if cfg.get("verify") else ""),
            (
                f"client CPU: {m['client_cpu_us_per_request']:.2f} µs/request, busiest thread "
                f"{100 * m['client_cpu_max_thread_utilization']:.0f}% of a core, "
                f"{'io_uring' if self.io == 'uring' else self.io}"
            ),
        ]
        if d["mode"] == "open":
            lines.append(
                f"open loop: {m['target_rate_per_sec']:g} req/s asked ({cfg['arrivals']} arrivals), "
                f"{m['ops_per_sec']:.0f} achieved; latency above is from the intended send time"
            )
            lines.append(
                f"uncorrected (from actual send): avg {m['avg_uncorrected_latency_ms']:.5f}  "
                f"p50 {m['p50_uncorrected_latency_ms']:.5f}  p99 {m['p99_uncorrected_latency_ms']:.5f}  "
                f"p99.9 {m['p999_uncorrected_latency_ms']:.5f}; late {int(m['late_requests']):,}, "
                f"unsent {int(m['unsent_requests']):,}"
            )
        if self.status == "stopped":
            lines.append("stopped before the end: results cover the part that ran")
        return "\n".join(lines)


def _errors_summary(e: KvErrors) -> str:
    """``12,345 SERVER_ERROR object too large for cache``; with several kinds
    ``12,400 = 12,345 SERVER_ERROR … + 55 connection closed``."""
    if not e.total:
        return "0"
    kinds = list(e.by_kind.items())
    text = (
        f"{e.total:,} {kinds[0][0]}"
        if len(kinds) == 1
        else f"{e.total:,} = "
        + " + ".join(f"{n:,} {kind}" for kind, n in kinds[:3])
        + (f" + {len(kinds) - 3} more kind(s)" if len(kinds) > 3 else "")
    )
    return text + (f" ({e.warmup:,} in the warmup)" if e.warmup else "")


def _pname(p: float) -> str:
    """memtier's header: p50, p99, p99.9, p99.99."""
    text = f"{p:.3f}".rstrip("0").rstrip(".")
    return f"p{text}"


def _num(v: float | None, digits: int) -> str:
    return "---" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


#: Metrics only an open-loop load (``rate`` given) reports.
OPEN_LOOP_METRICS = frozenset(n for n in METRICS if "uncorrected" in n) | {
    "target_rate_per_sec",
    "late_requests",
    "unsent_requests",
}
#: Metrics only a load that sends GETs can report.
GET_METRICS = frozenset({"hit_ratio"})


def kv_metric_names(*, open_loop: bool, gets: bool) -> frozenset[str]:
    """The flat metric names a load reports (`METRICS`), for a closed or open loop, with or
    without GETs (``ratio`` N:0 sends none). Pure: for checking a spec before it runs."""
    names = frozenset(METRICS)
    if not open_loop:
        names -= OPEN_LOOP_METRICS
    if not gets:
        names -= GET_METRICS
    return names
