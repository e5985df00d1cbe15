"""Type stubs for the compiled module `perflab._native` (crates/py). One section per crate."""

from collections.abc import Callable
from typing import Any

__version__: str

# probes
# Each measuring function releases the GIL, pins the calling thread to `core` while it
# runs (restoring its affinity after) and returns one dict per measurement. ValueError:
# bad argument or core; RuntimeError: self-validation failed; MemoryError: allocation.

def probe_cpu(duration: float, repeat: int = 1, core: int | None = None) -> list[dict[str, Any]]:
    """keys: iterations, seconds, cpu_seconds, iter_per_sec, checksum, core."""

def probe_cpu_validate() -> None: ...
def probe_memmove(
    cases: list[tuple[int, int]],
    duration: float,
    repeat: int = 1,
    core: int | None = None,
    huge_pages: bool = False,
) -> list[dict[str, Any]]:
    """cases: (copy_size bytes, buffers). keys: round, copy_size, buffers, copies, seconds,
    cpu_seconds, mib_per_sec, copies_per_sec, verified_blocks, core."""

def probe_latency(
    sizes: list[int],
    orders: list[str],
    duration: float,
    repeat: int = 1,
    core: int | None = None,
    huge_pages: bool = False,
    seed: int = 1,
) -> list[dict[str, Any]]:
    """orders: "page" and/or "random". keys: round, size_bytes, order, accesses, seconds,
    cpu_seconds, ns_per_access, core."""

def probe_memmove_cases() -> list[tuple[str, int, int]]: ...
def probe_memmove_sweep_grid() -> tuple[list[int], list[int]]: ...
def probe_latency_sizes(min: int, max: int, points_per_octave: int = 1) -> list[int]: ...
def probe_allowed_cores() -> list[int]: ...

# end probes

# load
# The key-value load generator (crates/load). Configs travel as the engine's normalised
# JSON (perflab.workloads.kv_config.KvConfig.to_engine()); results as "perflab-kv-result"
# JSON (perflab.workloads.kv_result). ValueError((field, message)): config rejected.
KV_RESULT_FORMAT: str
KV_RESULT_VERSION: int

def kv_run(
    config_json: str,
    tick: Callable[[dict[str, Any]], bool] | None = None,
    tick_interval: float = 0.1,
) -> tuple[str, BaseException | None]:
    """Run with the GIL released. `tick(progress) -> stop?` is called every tick_interval s
    (signals are handled there too). Returns (result JSON, exception raised by tick or a
    signal handler during the run, which stopped it; else None)."""

def kv_merge(results_json: list[str]) -> str: ...
def kv_default_config() -> str: ...
def kv_check_config(config_json: str) -> None: ...

# end load

# profile
# Folded stacks and flame graphs (the inferno crate). Strings in, strings out; ValueError
# on input inferno cannot read.
def fold_perf_script(text: str, annotate_kernel: bool = False) -> str:
    """`perf script` output → folded stack lines ("comm;outer;…;leaf count")."""

def stackless_samples(text: str) -> int:
    """Samples of `perf script` text (with call graphs) that have no frame at all."""

def fill_stackless(text: str, leaves: str) -> str:
    """`perf script` text, each stackless sample given its leaf from ``leaves`` (`perf
    script -G -F time,ip,sym,dso`, one line a sample, matched by time); ValueError on a
    mismatch."""

def diff_folded(before: str, after: str, normalize: bool = True) -> str:
    """Two folded profiles → "stack before after" lines for a differential flame graph."""

def flamegraph_svg(
    folded: str,
    title: str,
    subtitle: str | None = None,
    count_name: str = "samples",
    width: int = 1200,
) -> str:
    """An SVG flame graph with inferno's search and zoom script; differential when the
    lines carry two counts."""

# end profile

# store
# The hot read of the results store (crates/store): an experiment's measured values and
# blocks by (cell_key, variant, metric), in run order; sqlite3 errors with sqlite_errorname.
# measured_values: (keys, offsets, values, blocks) — group g is [offsets[g], offsets[g + 1])
# of values (float64) and blocks (int64); offsets are uint64; all in native byte order.

def measured_values(
    uri: str, experiment_id: int, busy_timeout_ms: int
) -> tuple[list[tuple[str, str, str]], bytes, bytes, bytes]: ...
def cells_and_variants(
    uri: str, experiment_id: int, busy_timeout_ms: int
) -> tuple[list[tuple[str, str, str]], list[tuple[str, int]]]: ...
def experiment_values(
    uri: str, experiment_id: int, busy_timeout_ms: int
) -> tuple[
    tuple[list[tuple[str, str, str]], bytes, bytes, bytes],
    tuple[list[tuple[str, str, str]], list[tuple[str, int]]],
]: ...

# end store

# text
# Numbers as the reports print them (crates/text): fmt_number of perflab.report.numbers for
# each value (4 significant digits, Python's digits), a column at once.

def fmt_numbers(values: list[float]) -> list[str]: ...

# end text
