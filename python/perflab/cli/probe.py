"""perflab probe cpu|memmove|latency — platform microbenchmarks, pinned, repeated, summarised."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.cli.lazy_rich import Table
from perflab.errors import InputError

if TYPE_CHECKING:
    import argparse

    from perflab.cli.common import Arguments, Subparsers
    from perflab.cli.io import CliIO
    from perflab.workloads.probes import ProbeResult


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "probe",
        help="run a platform probe (cpu score, memmove bandwidth, memory latency)",
        description="Single-core microbenchmarks for the cross-platform model (from the "
        "router performance-index experiment). "
        "Each is self-validating; values are medians over --repeat runs.",
    )
    p.add_argument("probe", choices=["cpu", "memmove", "latency"])
    p.add_argument("--core", type=int, metavar="N", help="pin the probe to this CPU")
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        metavar="K",
        help="repeated measurements (default: 5; latency 3, as each repeat rebuilds up to 1 GiB)",
    )
    p.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="time per measurement (default: cpu 1, memmove 0.5 per case, latency 0.1 per point)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (all repeats)")
    p.add_argument(
        "--store",
        metavar="PATH",
        help="also record the result as an experiment in this results store",
    )
    p.add_argument("--name", help="experiment name for --store (default probe-<probe>)")
    _cpu_options(p.add_argument_group("cpu"))
    _memmove_options(p.add_argument_group("memmove"))
    _latency_options(p.add_argument_group("latency"))
    p.add_argument(
        "--pages",
        choices=["base", "huge"],
        default="base",
        help="memmove/latency memory: base 4 KiB pages (default, so TLB effects show) or "
        "transparent huge pages",
    )
    p.set_defaults(handler=run)


def _cpu_options(g: Arguments) -> None:
    """CoreMark instead of the built-in CPU score."""
    g.add_argument(
        "--coremark",
        metavar="PATH",
        help="run this CoreMark binary instead and use its score (validated runs only)",
    )
    g.add_argument(
        "--coremark-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="argument passed to CoreMark (repeatable)",
    )


def _memmove_options(g: Arguments) -> None:
    """Which mmbm cases, and the copy size × buffer count sweep."""
    g.add_argument(
        "--case",
        action="append",
        metavar="NAME",
        help="only this mmbm case (repeatable): small_no_miss, small_tlbmiss, large_no_miss, "
        "large_cachemiss, large_allmiss",
    )
    g.add_argument(
        "--sweep",
        action="store_true",
        help="also sweep copy size × buffer count (shows the cache and TLB knees)",
    )
    g.add_argument(
        "--sweep-sizes", metavar="LIST", help="copy sizes for --sweep, bytes, e.g. 64,172,4096"
    )
    g.add_argument(
        "--sweep-buffers", metavar="LIST", help="buffer counts for --sweep, e.g. 128,1024,3549"
    )
    g.add_argument(
        "--sweep-duration", type=float, metavar="SECONDS", help="time per sweep cell (default 0.1)"
    )


def _latency_options(g: Arguments) -> None:
    """Working-set sizes and access order of the pointer chase."""
    g.add_argument(
        "--min-size", default="4K", metavar="SIZE", help="smallest working set (default 4K)"
    )
    g.add_argument(
        "--max-size", default="1G", metavar="SIZE", help="largest working set (default 1G)"
    )
    g.add_argument(
        "--points-per-octave",
        type=int,
        default=1,
        metavar="N",
        help="working sets per doubling (default 1)",
    )
    g.add_argument(
        "--order",
        choices=["page", "random", "both"],
        default="both",
        help="page: random within pages, pages in random order; random: across the whole set",
    )


def parse_size(text: str) -> int:
    """'4K', '64MiB', '1G', '4096' → bytes (binary multiples)."""
    m = _SIZE.match(text)
    if not m:
        raise InputError(
            f"size {text!r}: use a number of bytes with an optional K, M, G suffix (e.g. 256M)"
        )
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _int_list(text: str | None, flag: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [
            parse_size(x) if flag == "--sweep-sizes" else int(x)
            for x in text.split(",")
            if x.strip()
        ]
    except ValueError:
        raise InputError(f"{flag} {text!r}: use a comma-separated list of integers") from None


def run(args: argparse.Namespace, io: CliIO) -> int:
    opts: dict[str, Any] = {"duration": args.duration}
    if args.probe == "cpu":
        opts.update(coremark=args.coremark, coremark_args=tuple(args.coremark_arg))
    elif args.probe == "memmove":
        opts.update(
            cases=args.case,
            sweep=args.sweep,
            sweep_sizes=_int_list(args.sweep_sizes, "--sweep-sizes"),
            sweep_buffers=_int_list(args.sweep_buffers, "--sweep-buffers"),
            sweep_duration=args.sweep_duration,
            huge_pages=args.pages == "huge",
        )
    else:
        opts.update(
            min_size=parse_size(args.min_size),
            max_size=parse_size(args.max_size),
            points_per_octave=args.points_per_octave,
            huge_pages=args.pages == "huge",
            orders=("page", "random") if args.order == "both" else (args.order,),
        )
    repeat = args.repeat if args.repeat is not None else (3 if args.probe == "latency" else 5)
    from perflab.api.probing import run_probe

    result, eid = run_probe(
        args.probe, core=args.core, repeat=repeat, store=args.store or None, name=args.name, **opts
    )
    if eid is not None:
        io.err.write(f"perflab: stored as experiment {eid} in {args.store}\n")
    if args.json:
        io.print(json.dumps(result.to_json(), indent=2))
        return 0
    host = result.host
    where = f"core {result.core}" if result.core is not None else "unpinned"
    io.print(
        f"probe {result.probe} on {host.get('cpu_model') or host.get('machine')} ({where}), "
        f"{result.repeat} repeat(s)"
    )
    if args.probe == "cpu":
        _summary_table(io, result, list(result.samples))
    elif args.probe == "memmove":
        _memmove_tables(io, result)
    else:
        _latency_table(io, result)
    for w in result.warnings:
        io.warn(w.message)
    return 0


def _fmt(v: float, sig: int = 4) -> str:
    """4 significant digits, thousands separated: 1.374, 84.86, 25,371."""
    if not math.isfinite(v):
        return "-"
    if sig == 0 or abs(v) >= 10 ** (sig - 1):
        return f"{v:,.0f}"
    return f"{v:.{sig}g}"


def _summary_table(
    io: CliIO,
    result: ProbeResult,
    names: list[str],
    label: Callable[[str], str] | None = None,
) -> None:
    sums = result.summaries()
    t = Table()
    t.add_column("metric")
    t.add_column("unit")
    for col in ("median", "95% CI of mean", "min", "max", "CV", "n"):
        t.add_column(col, justify="right")
    for name in names:
        s = sums[name]
        t.add_row(
            label(name) if label else name,
            result.units[name],
            _fmt(s.median),
            f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]" if s.n > 1 else "-",
            _fmt(s.min),
            _fmt(s.max),
            f"{s.cv:.2%}" if math.isfinite(s.cv) else "-",
            str(s.n),
        )
    io.console.print(t)


def _memmove_tables(io: CliIO, result: ProbeResult) -> None:
    cases = result.memmove_cases()
    sums = result.summaries()
    t = Table(title="memmove (mmbm cases): copy bandwidth, MiB/s")
    for col, j in (
        ("case", "left"),
        ("copy (B)", "right"),
        ("buffers", "right"),
        ("working set (KiB)", "right"),
        ("median (MiB/s)", "right"),
        ("95% CI of mean (MiB/s)", "right"),
        ("copies/s (M)", "right"),
        ("CV", "right"),
    ):
        t.add_column(col, justify=j)
    for name, (size, bufs) in cases.items():
        key = f"memmove_{name}_mib_per_sec"
        if key not in sums:
            continue
        s = sums[key]
        t.add_row(
            name + (" *" if name == "small_tlbmiss" else ""),
            str(size),
            str(bufs),
            f"{bufs * 4160 // 1024:,}",
            _fmt(s.median),
            f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]" if s.n > 1 else "-",
            f"{s.median * 1048576 / size / 1e6:.2f}",
            f"{s.cv:.2%}" if math.isfinite(s.cv) else "-",
        )
    if t.row_count:
        io.console.print(t)
        io.print("* the case the router performance-index model uses (memmove_mib_per_sec)")
    sizes, counts, cells = result.sweep_table()
    if cells:
        st = Table(
            title="memmove sweep: median MiB/s by copy size (rows) and buffer count (columns); "
            "each buffer is 4160 B, so N buffers touch N pages"
        )
        st.add_column("copy (B)", justify="right")
        for b in counts:
            st.add_column(str(b), justify="right")
        for copy in sizes:
            st.add_row(str(copy), *[_fmt(cells.get((copy, b), math.nan), 0) for b in counts])
        io.console.print(st)


def _latency_table(io: CliIO, result: ProbeResult) -> None:
    rows = result.latency_table()
    t = Table(title="pointer-chase latency, ns per access (median)")
    t.add_column("working set", justify="right")
    orders = sorted({o for _, d in rows for o in d}, reverse=False)
    for o in orders:
        t.add_column({"page": "page-local (ns)", "random": "random (ns)"}[o], justify="right")
    if len(orders) == 2:
        t.add_column("TLB cost: random − page (ns)", justify="right")
    for size, d in rows:
        cells = [_fmt(d.get(o, math.nan), 3) for o in orders]
        if len(orders) == 2:
            cells.append(_fmt(d["random"] - d["page"], 3))
        t.add_row(_human(size), *cells)
    io.console.print(t)


def _human(n: int) -> str:
    for unit, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            v = n / unit
            return f"{v:.0f} {suffix}" if v == int(v) else f"{v:.1f} {suffix}"
    return f"{n} B"
