"""perflab load — key-value load with memtier_benchmark's options: parse → KvConfig → run_kv → print.

Exit status: 0 every request succeeded; 1 some failed (error replies such as
``SERVER_ERROR …`` or ``-OOM …``, requests lost with a connection) or a fault ended the
run; 2 bad input; 130 interrupted.
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, TextIO

from perflab.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNS_FAILED
from perflab.errors import InputError
from perflab.report.safe_text import terminal_safe

if TYPE_CHECKING:  # the engine and numpy load on use: building the parser stays light
    import argparse

    from perflab.cli.common import Arguments, Subparsers
    from perflab.cli.io import CliIO
    from perflab.workloads.kv import KvConfig, KvProgress


#: KvConfig field → the flag that sets it (for error messages).
FLAGS = {
    "server": "--server",
    "port": "--port",
    "protocol": "--protocol",
    "ratio": "--ratio",
    "requests": "--requests",
    "test_time": "--test-time",
    "clients": "--clients",
    "threads": "--threads",
    "pipeline": "--pipeline",
    "key_prefix": "--key-prefix",
    "key_min": "--key-minimum",
    "key_max": "--key-maximum",
    "key_pattern": "--key-pattern",
    "key_median": "--key-median",
    "key_stddev": "--key-stddev",
    "key_zipf_exp": "--key-zipf-exp",
    "data_size": "--data-size",
    "data_size_pattern": "--data-size-pattern",
    "seed": "--seed",
    "randomize": "--randomize",
    "distinct_client_seed": "--distinct-client-seed",
    "rate": "--rate",
    "arrivals": "--arrivals",
    "warmup": "--warmup",
    "connect_timeout": "--connect-timeout",
    "response_timeout": "--response-timeout",
    "late_threshold": "--late-threshold",
    "source_addresses": "--source-address",
    "verify": "--verify",
    "io": "--io",
    "spin": "--spin",
}


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "load",
        help="key-value load (memcached, Redis) with memtier_benchmark's options",
        description="Drive memcached (text or binary protocol) or Redis with a memtier_benchmark-compatible "
        "load and print memtier's table. Closed loop by default; --rate gives an open loop "
        "whose latency is measured from each request's intended send time.",
        epilog="Exit status: 0 all requests succeeded, 1 some failed (error replies, connection faults; "
        "counted by kind in the output), 2 bad input, 130 interrupted.",
    )
    _connection_options(p.add_argument_group("connection"))
    _workload_options(p.add_argument_group("workload"))
    _measurement_options(p.add_argument_group("open loop and measurement"))
    p.set_defaults(handler=run)


def _connection_options(g: Arguments) -> None:
    """Servers, protocol, connections and their timeouts."""
    g.add_argument(
        "-s",
        "--server",
        action="append",
        metavar="HOST[:PORT]",
        help="server (repeatable: connections are spread over all; default 127.0.0.1)",
    )
    g.add_argument(
        "-p",
        "--port",
        type=int,
        help="port for servers given without one (default 6379 for redis, 11211 for memcache)",
    )
    g.add_argument(
        "-P",
        "--protocol",
        choices=["redis", "memcache_text", "memcache_binary"],
        help="wire protocol (default redis)",
    )
    g.add_argument(
        "-c", "--clients", type=int, metavar="N", help="connections per thread (default 50)"
    )
    g.add_argument("-t", "--threads", type=int, metavar="N", help="threads (default 4)")
    g.add_argument(
        "--source-address",
        action="append",
        metavar="IP",
        help="bind connections to these local addresses, round-robin (repeatable)",
    )
    g.add_argument(
        "--io",
        choices=["auto", "uring", "epoll"],
        help="I/O loop: io_uring where the kernel allows it, else epoll (default auto)",
    )
    g.add_argument(
        "--spin",
        metavar="auto|off|DURATION",
        help="spin before sleeping for replies: auto (up to 50us, while few requests are in "
        "flight and spinning costs less CPU per reply than sleeping or raises throughput far "
        "more; default), off, or e.g. 20us before every wait",
    )
    g.add_argument("--connect-timeout", metavar="DURATION", help="per connection (default 5s)")
    g.add_argument(
        "--response-timeout",
        metavar="DURATION",
        help="fail when a connection waits this long for a reply (default 10s)",
    )


def _workload_options(g: Arguments) -> None:
    """Requests, keys and values: memtier_benchmark's workload flags."""
    g.add_argument(
        "-n",
        "--requests",
        metavar="N|allkeys",
        help="requests per connection, or allkeys (every key once; use --key-pattern P:P)",
    )
    g.add_argument(
        "--test-time", metavar="DURATION", help="measured duration, e.g. 20s (instead of -n)"
    )
    g.add_argument("--ratio", metavar="SET:GET", help="set:get ratio (default 1:10)")
    g.add_argument(
        "--pipeline", type=int, metavar="N", help="requests in flight per connection (default 1)"
    )
    g.add_argument("-d", "--data-size", metavar="BYTES", help="value size (default 32)")
    g.add_argument("--data-size-range", metavar="MIN-MAX", help="value sizes in a range")
    g.add_argument(
        "--data-size-pattern",
        choices=["R", "S"],
        help="sizes in a range: R random (default), S by key index",
    )
    g.add_argument("--key-prefix", metavar="TEXT", help="key prefix (default memtier-)")
    g.add_argument("--key-minimum", type=int, metavar="N", help="smallest key index (default 0)")
    g.add_argument(
        "--key-maximum", type=int, metavar="N", help="largest key index (default 10000000)"
    )
    g.add_argument(
        "--key-pattern",
        metavar="SET:GET",
        help="S sequential, R random, G Gaussian, P parallel, Z Zipf (default R:R)",
    )
    g.add_argument(
        "--key-median", type=float, metavar="X", help="Gaussian centre (default: middle of range)"
    )
    g.add_argument(
        "--key-stddev", type=float, metavar="X", help="Gaussian stddev (default: range/6)"
    )
    g.add_argument(
        "--key-zipf-exp", type=float, metavar="S", help="Zipf exponent in (0, 5) (default 1)"
    )
    g.add_argument("--randomize", action="store_true", default=None, help="seed from the clock")
    g.add_argument(
        "--distinct-client-seed",
        action="store_true",
        default=None,
        help="a different random stream per connection",
    )
    g.add_argument("--seed", type=int, help="seed of the random streams (default 5381)")
    g.add_argument(
        "--verify",
        action="store_true",
        default=None,
        help="check every GET hit returns the value perflab writes for its key",
    )


def _measurement_options(g: Arguments) -> None:
    """Open-loop rate, warm-up and what is printed."""
    g.add_argument(
        "--rate", type=float, metavar="REQ/S", help="open loop: total requests per second"
    )
    g.add_argument(
        "--arrivals", choices=["constant", "poisson"], help="open-loop arrivals (default constant)"
    )
    g.add_argument(
        "--late-threshold",
        metavar="DURATION",
        help="open loop: sent later than this after the intended time counts as late (default 1ms)",
    )
    g.add_argument(
        "--warmup", metavar="DURATION", help="leave the first DURATION out of the results"
    )
    g.add_argument(
        "--print-percentiles",
        metavar="LIST",
        default="50,99,99.9",
        help="latency percentiles in the table (default 50,99,99.9)",
    )
    g.add_argument(
        "--json", action="store_true", help="print the full result (with histograms) as JSON"
    )
    g.add_argument("-q", "--quiet", action="store_true", help="no progress line")


def config_from_args(args: argparse.Namespace) -> KvConfig:
    """The KvConfig the flags describe (only flags given override KvConfig's defaults)."""
    if args.data_size is not None and args.data_size_range is not None:
        raise InputError("give --data-size or --data-size-range, not both")
    values = {
        "server": args.server[0] if args.server and len(args.server) == 1 else args.server,
        "port": args.port,
        "protocol": args.protocol,
        "clients": args.clients,
        "threads": args.threads,
        "source_addresses": args.source_address,
        "connect_timeout": args.connect_timeout,
        "response_timeout": args.response_timeout,
        "requests": args.requests,
        "test_time": args.test_time,
        "ratio": args.ratio,
        "pipeline": args.pipeline,
        "data_size": args.data_size_range if args.data_size_range is not None else args.data_size,
        "data_size_pattern": args.data_size_pattern,
        "key_prefix": args.key_prefix,
        "key_min": args.key_minimum,
        "key_max": args.key_maximum,
        "key_pattern": args.key_pattern,
        "key_median": args.key_median,
        "key_stddev": args.key_stddev,
        "key_zipf_exp": args.key_zipf_exp,
        "randomize": args.randomize,
        "distinct_client_seed": args.distinct_client_seed,
        "seed": args.seed,
        "verify": args.verify,
        "io": args.io,
        "spin": args.spin,
        "rate": args.rate,
        "arrivals": args.arrivals,
        "late_threshold": args.late_threshold,
        "warmup": args.warmup,
    }
    from perflab.api.load import load_config

    return load_config(values, FLAGS)


def parse_percentiles(text: str) -> list[float]:
    try:
        ps = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        ps = []
    if not ps or any(not 0 < p <= 100 or math.isnan(p) for p in ps):
        raise InputError(f"--print-percentiles {text!r}: use numbers in (0, 100], e.g. 50,99,99.9")
    return ps


class ProgressLine:
    """memtier-like live line on stderr: rewritten in place on a terminal, every 5 s otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        try:
            self.tty = stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False
        self.last_print = time.monotonic()
        self.width = 0

    def __call__(self, p: KvProgress) -> None:
        if not self.tty and time.monotonic() - self.last_print < 5.0:
            return
        self.last_print = time.monotonic()
        if p.phase == "connecting":
            text = f"connecting: {p.connections:,}/{p.connections_planned:,}"
        else:
            frac = p.fraction
            left = p.remaining_s
            text = (
                f"[{p.elapsed_s:6.1f} s{f' {100 * frac:3.0f}%' if frac is not None else ''}"
                f"{f', {left:.0f} s left' if left is not None else ''}] {p.phase}: "
                f"{p.ops_per_sec:,.0f} ops/s (avg {p.ops_per_sec_avg:,.0f}), "
                f"{p.requests_done:,} requests, {p.errors:,} errors"
            )
        if self.tty:
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.load import run_load

    cfg = config_from_args(args)
    percentiles = parse_percentiles(args.print_percentiles)
    line = None if args.quiet or args.json else ProgressLine(io.err)
    if not args.json:
        io.err.write(f"perflab load: {terminal_safe(cfg.describe(), one_line=True)}\n")
    try:
        result, interrupted = run_load(
            cfg, FLAGS, progress=line, interval=0.5 if line and line.tty else 1.0
        )
    finally:
        if line is not None:
            line.close()
    # Server replies (error kinds, their messages) reach the text below: printed escaped.
    if args.json:
        io.print(json.dumps(result.to_json(), indent=2))
    else:
        if result.metrics()["requests"] > 0 or result.status == "complete":
            io.print(result.format_table(percentiles))
            io.print()
        io.print(terminal_safe(result.format_summary()))
    errors = result.errors
    for w in result.warnings:
        if w.code == "errors" and errors.total and result.status != "failed":
            continue  # said by the error line below
        io.warn(terminal_safe(w.message, one_line=True))
    if interrupted:
        io.error("interrupted: the results above cover the part that ran")
        return EXIT_INTERRUPTED
    if result.status == "failed":
        io.error(terminal_safe(f"the run failed: {result.error}", one_line=True))
        return EXIT_RUNS_FAILED
    if errors.total:
        io.error(terminal_safe(errors.reason(), one_line=True))
        return EXIT_RUNS_FAILED
    return EXIT_OK
