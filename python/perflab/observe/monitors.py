"""Monitors: /proc (vmstat, meminfo, PSI, per-CPU time, network counters) sampled at a set
interval while a phase runs, kept as one time series per run and phase.

On this machine a sampler thread reads the files (`LocalSampler`): a sample at the start,
one every interval, one at the stop; bounded (past `MAX_SAMPLES` every other sample is
dropped and the interval doubled) and joined when stopped, so it never outlives its
phase. On another host the same files are read by a shell loop (`shell_loop`: POSIX
``sh``, ``cat``, ``sleep``) run there as a step beside the phase, whose output
(`parse_loop_output`) gives the same samples. A series is stored as JSON lines
(`MonitorSeries.to_bytes`: a header, then one sample a line); the store compresses it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from perflab.observe.proc_sources import SOURCE_FILES, parse

#: Most samples kept per phase; beyond, every other one is dropped and the interval doubled.
MAX_SAMPLES = 2048
#: Shortest interval a spec may ask for (seconds).
MIN_INTERVAL = 0.01

Sample = dict[str, object]  # {"t": seconds from the start, SOURCE: {key: value}, …}


@dataclass
class MonitorSeries:
    """One phase's samples: ``t`` (s since the first) and each source's numbers."""

    interval: float
    sources: list[str]
    samples: list[Sample] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # "psi: /proc/pressure/io: …"
    host: str = ""

    def values(self, source: str) -> list[tuple[float, dict[str, float]]]:
        """(t, numbers) of ``source`` in each sample that has it."""
        out: list[tuple[float, dict[str, float]]] = []
        for s in self.samples:
            numbers = s.get(source)
            if isinstance(numbers, dict) and numbers:
                t = s.get("t")
                out.append((float(t) if isinstance(t, (int, float)) else 0.0, numbers))
        return out

    def to_bytes(self) -> bytes:
        head = {
            "monitor": 1,
            "interval": self.interval,
            "sources": self.sources,
            "missing": self.missing,
            "host": self.host,
        }
        lines = [json.dumps(head)] + [json.dumps(s, separators=(",", ":")) for s in self.samples]
        return ("\n".join(lines) + "\n").encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> MonitorSeries:
        """A stored series; ValueError when it is not one."""
        lines = data.decode("utf-8", "replace").splitlines()
        if not lines:
            raise ValueError("empty monitor series")
        head = json.loads(lines[0])
        if not isinstance(head, dict) or head.get("monitor") != 1:
            raise ValueError("not a monitor series")
        samples = [json.loads(line) for line in lines[1:] if line.strip()]
        return cls(
            float(head.get("interval", 0.0)),
            list(head.get("sources", [])),
            [s for s in samples if isinstance(s, dict)],
            list(head.get("missing", [])),
            str(head.get("host", "")),
        )


def read_sample(sources: list[str], root: Path, missing: set[str]) -> dict[str, object]:
    """One reading of every source's files under ``root`` (``/`` in use; a test's copy
    otherwise); a file that cannot be read is added to ``missing`` once."""
    sample: dict[str, object] = {}
    for source in sources:
        texts: dict[str, str] = {}
        for path in SOURCE_FILES[source]:
            try:
                texts[path] = (root / path.lstrip("/")).read_text()
            except OSError as e:
                missing.add(f"{source}: {path}: {e.strerror or type(e).__name__}")
        sample[source] = parse(source, texts)
    return sample


class LocalSampler:
    """Samples this machine's /proc in a thread from `start` to `stop`."""

    def __init__(self, sources: list[str], interval: float, root: Path = Path("/")) -> None:
        self.series = MonitorSeries(max(interval, MIN_INTERVAL), list(sources))
        self.root = root
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._missing: set[str] = set()
        self._t0 = 0.0
        self._lock = threading.Lock()

    def start(self) -> LocalSampler:
        self._t0 = time.monotonic()
        self._take()  # the first sample before the phase starts
        self._thread = threading.Thread(target=self._loop, name="perflab-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> MonitorSeries:
        """Stops the thread (joined) and takes the last sample: the series of the phase."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._take()
        self.series.missing = sorted(self._missing)
        return self.series

    def _loop(self) -> None:
        due = self._t0 + self.series.interval
        while not self._stop.wait(max(0.0, due - time.monotonic())):
            self._take()
            due = max(due + self.series.interval, time.monotonic())

    def _take(self) -> None:
        t = time.monotonic() - self._t0
        sample = read_sample(self.series.sources, self.root, self._missing)
        with self._lock:
            samples = self.series.samples
            samples.append({"t": round(t, 6), **sample})
            if len(samples) > MAX_SAMPLES:  # bounded: thin out, sample half as often
                samples[:] = samples[::2] if len(samples) % 2 else samples[::2] + [samples[-1]]
                self.series.interval *= 2


def shell_loop(sources: list[str], interval: float) -> str:
    """A POSIX shell loop printing a sample of ``sources`` every ``interval`` seconds (for a
    host perflab reaches over SSH): ``@t UPTIME``, then each file's lines as ``PATH:LINE``,
    then ``@end``. Two processes a sample (grep, sleep): on a small device every fork is
    time taken from what it measures."""
    files = " ".join(p for s in sources for p in SOURCE_FILES[s])
    # /dev/null makes grep name the file on every line even when one file is readable
    return (
        f'while :; do read -r up rest < /proc/uptime; echo "@t $up"; '
        f"grep '' /dev/null {files} 2>/dev/null; "
        f"echo @end; sleep {max(interval, MIN_INTERVAL):g}; done"
    )


def parse_loop_output(text: str, sources: list[str], interval: float) -> MonitorSeries:
    """The samples a `shell_loop` printed; a block cut short (no ``@end``) is left out."""
    series = MonitorSeries(interval, list(sources))
    missing: set[str] = set()
    t0: float | None = None
    t = 0.0
    texts: dict[str, list[str]] = {}
    paths = {p for s in sources for p in SOURCE_FILES[s]}
    for line in text.splitlines():
        if line.startswith("@t "):
            try:
                t = float(line[3:].strip())
            except ValueError:
                t = 0.0
            texts = {}
        elif line == "@end":
            t0 = t if t0 is None else t0
            sample: Sample = {"t": round(t - t0, 6)}
            for source in sources:
                got = {p: "\n".join(texts[p]) for p in SOURCE_FILES[source] if texts.get(p)}
                missing |= {f"{source}: {p}: not readable" for p in SOURCE_FILES[source]} - {
                    f"{source}: {p}: not readable" for p in got
                }
                sample[source] = parse(source, got)
            series.samples.append(sample)
        else:
            path, _, rest = line.partition(":")
            if path in paths:
                texts.setdefault(path, []).append(rest)
    series.missing = sorted(missing)
    return series
