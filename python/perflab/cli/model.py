"""perflab model index|fit|predict — the router performance-index experiment's
performance index across platforms.

    I = rate × (1/cpu + M·L/C + N)

Inputs are CSV rows, one per platform; flags name the columns and the memmove unit.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.cli.model_tables import print_fit, print_index, print_predictions
from perflab.errors import InputError
from perflab.model.units import BANDWIDTH_UNITS  # light; the fitting code is imported on use

if TYPE_CHECKING:
    from collections.abc import Sequence

    from perflab.cli.common import Arguments, Subparsers
    from perflab.cli.io import CliIO
    from perflab.model import FitResult, Observation, Prediction


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "model",
        help="cross-platform performance model: index, fit, predict",
        description="I = rate × (1/cpu + M·L/C + N): cpu in iterations/s per core, C the "
        "memmove bandwidth, L the packet length in bytes, rate in packets/s, "
        "N in seconds per packet.",
    )
    msub = p.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    pi = msub.add_parser("index", help="I per platform for given M and N")
    _inputs(pi)
    pi.add_argument("--M", type=float, default=1.0, help="memmove weight M (default 1)")
    pi.add_argument(
        "--N", type=_seconds, default=0.0, help="fixed cost per packet, seconds (e.g. 2e-6 or 2us)"
    )
    pi.set_defaults(handler=run_index)
    pf = msub.add_parser("fit", help="estimate M, N and I from ≥ 3 platforms, with uncertainty")
    _inputs(pf)
    _fit_options(pf)
    pf.set_defaults(handler=run_fit)
    pp = msub.add_parser("predict", help="rate of new platform(s) with a prediction interval")
    _inputs(pp)
    _fit_options(pp)
    pp.add_argument(
        "--target", metavar="CSV", help="CSV of platforms to predict (same columns; rate optional)"
    )
    pp.add_argument(
        "--target-store",
        action="append",
        default=[],
        metavar="STORE[=NAME]",
        help="a platform to predict from its results store (probe metrics only); same forms "
        "as --from-store",
    )
    pp.add_argument(
        "--target-name", default="target", help="name of the platform given by --target-* values"
    )
    pp.add_argument(
        "--target-cpu", type=float, metavar="SCORE", help="CPU score per core of the new platform"
    )
    pp.add_argument(
        "--target-memmove", type=float, metavar="BW", help="memmove bandwidth, in --memmove-unit"
    )
    pp.add_argument(
        "--target-length",
        type=float,
        metavar="BYTES",
        help="packet length (default: --length-bytes)",
    )
    pp.add_argument(
        "--method",
        choices=["t", "bootstrap"],
        default="t",
        help="prediction interval: t (delta method + Student t, default) or bootstrap",
    )
    pp.set_defaults(handler=run_predict)


def _inputs(p: Arguments) -> None:
    p.add_argument("csv", metavar="CSV", nargs="?", help="one row per platform")
    p.add_argument(
        "--from-store",
        action="append",
        default=[],
        metavar="STORE[=NAME]",
        help="a platform from a results store: the latest experiment holding each metric, median "
        "over runs; repeatable. 'STORE;name=N;variant=V;cell=K' picks one variant/cell (one "
        "store can hold several platform configurations); ';cpu=M;memmove=M;memmove_unit=U;"
        "rate=M' name that store's metrics when they differ from the column flags",
    )
    p.add_argument("--variant", help="with --from-store: the variant holding the metrics")
    p.add_argument("--cell", help="with --from-store: the matrix cell holding the metrics")
    p.add_argument("--platform", default="platform", metavar="COL", help="platform name column")
    p.add_argument(
        "--cpu",
        default="cpu_iter_per_sec",
        metavar="COL",
        help="CPU score per core column, iterations/s (default cpu_iter_per_sec)",
    )
    p.add_argument(
        "--memmove",
        default="memmove_mib_per_sec",
        metavar="COL",
        help="memmove bandwidth column (default memmove_mib_per_sec)",
    )
    p.add_argument(
        "--memmove-unit",
        default="MiB/s",
        metavar="UNIT",
        help=f"unit of the memmove column: {', '.join(BANDWIDTH_UNITS)} (default MiB/s)",
    )
    p.add_argument(
        "--length", default="packet_len_bytes", metavar="COL", help="packet length column, bytes"
    )
    p.add_argument(
        "--length-bytes",
        type=float,
        metavar="L",
        help="one packet length for every row instead of a column",
    )
    p.add_argument(
        "--rate", default="rate_pkts_per_sec", metavar="COL", help="observed rate column, packets/s"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _fit_options(p: Arguments) -> None:
    p.add_argument("--M", type=float, default=None, help="fix M instead of estimating it")
    p.add_argument(
        "--N",
        type=_seconds,
        default=None,
        help="fix N (seconds, or e.g. 2us) instead of estimating it",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="B",
        help="bootstrap replicates (default 2000)",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--plot", metavar="FILE", help="write observed vs predicted rates (.svg, .png or .pdf)"
    )


def _seconds(text: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
    t = text.strip()
    for suffix in sorted(units, key=len, reverse=True):
        if t.endswith(suffix):
            num, mult = t[: -len(suffix)], units[suffix]
            break
    else:
        num, mult = t, 1.0
    try:
        v = float(num) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: use seconds (2e-6) or a unit (2us, 0.5ms)"
        ) from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"{text!r}: a time per packet must be ≥ 0")
    return v


def load_observations(
    path: str | None,
    args: argparse.Namespace,
    *,
    need_rate: bool = True,
    stores: list[str] | None = None,
) -> list[Observation]:
    """Platforms from a CSV (column flags) and/or stores (metric names = the column flags)."""
    stores = args.from_store if stores is None else stores
    obs = _from_csv(path, args, need_rate=need_rate) if path else []
    if stores:
        from perflab.platform.stored import observation_from_store

        if args.length_bytes is None:
            raise InputError(
                "--from-store needs --length-bytes (the packet length of the benchmark)"
            )
        for spec in stores:
            store, opts = _store_spec(spec)
            obs.append(
                observation_from_store(
                    store,
                    cpu=opts.get("cpu", args.cpu),
                    memmove=opts.get("memmove", args.memmove),
                    memmove_unit=opts.get("memmove_unit", args.memmove_unit),
                    rate=opts.get("rate", args.rate),
                    rate_optional=not need_rate,
                    length_bytes=args.length_bytes,
                    platform=opts.get("name"),
                    variant=opts.get("variant", args.variant),
                    cell=opts.get("cell", args.cell),
                )
            )
    if not obs:
        raise InputError("no platforms: give a CSV and/or --from-store STORE")
    return obs


#: Per-store options of --from-store/--target-store ('STORE;name=N;variant=V;…'); the metric
#: names (cpu, memmove, rate) and unit override the column flags for that store.
STORE_OPTIONS = ("name", "variant", "cell", "cpu", "memmove", "memmove_unit", "rate")


def _store_spec(spec: str) -> tuple[str, dict[str, str]]:
    """'db' | 'db=NAME' | 'db;name=N;variant=V;cell=K;cpu=METRIC;…' → (path, options)."""
    if ";" not in spec:
        path, _, name = spec.partition("=")
        return path, ({"name": name} if name else {})
    path, *parts = spec.split(";")
    opts = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or key not in STORE_OPTIONS:
            raise InputError(f"store option {part!r} in {spec!r}: use {'=, '.join(STORE_OPTIONS)}=")
        opts[key] = value
    return path, opts


def _from_csv(path: str, args: argparse.Namespace, *, need_rate: bool) -> list[Observation]:
    from perflab.api.modeling import observations_from_csv

    columns = {
        "platform": args.platform,
        "cpu": args.cpu,
        "memmove": args.memmove,
        "length": args.length,
        "rate": args.rate,
        "memmove_unit": args.memmove_unit,
    }
    return observations_from_csv(path, columns, length_bytes=args.length_bytes, need_rate=need_rate)


def run_index(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.model import index_table

    obs = load_observations(args.csv, args)
    table = index_table(list(obs), args.M, args.N)
    if args.json:
        io.print(json.dumps(table.to_json(), indent=2))
        return 0
    print_index(io, obs, table, args.M, args.N, args.memmove_unit)
    return 0


def _fit(args: argparse.Namespace, obs: list[Observation]) -> FitResult:
    from perflab.api.modeling import fit

    return fit(
        obs,
        M=args.M,
        N=args.N,
        bootstrap=args.bootstrap,
        confidence=args.confidence,
        seed=args.seed,
    )


def _plot(args: argparse.Namespace, res: FitResult, predictions: Sequence[Prediction] = ()) -> None:
    if not args.plot:
        return
    from perflab.report.model_plot import FORMATS, render_model_plot

    fmt = Path(args.plot).suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise InputError(f"--plot {args.plot}: the file name must end in .svg, .png or .pdf")
    data = render_model_plot(res, fmt, predictions=predictions)
    try:
        Path(args.plot).write_bytes(data)
    except OSError as e:
        raise InputError(f"cannot write {args.plot}: {e.strerror}") from None


def run_fit(args: argparse.Namespace, io: CliIO) -> int:
    res = _fit(args, load_observations(args.csv, args))
    _plot(args, res)
    if args.json:
        io.print(json.dumps(res.to_json(), indent=2, default=_json_default))
        return 0
    print_fit(io, res)
    if args.plot:
        io.print(f"plot: {args.plot}")
    return 0


def run_predict(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.model import Observation
    from perflab.model.prediction import predict
    from perflab.model.units import bytes_per_second

    obs = load_observations(args.csv, args)
    targets: list[Observation] = []
    if args.target or args.target_store:
        targets += load_observations(args.target, args, need_rate=False, stores=args.target_store)
    if args.target_cpu is not None or args.target_memmove is not None:
        if args.target_cpu is None or args.target_memmove is None:
            raise InputError("give both --target-cpu and --target-memmove (or a --target CSV)")
        length = args.target_length or args.length_bytes
        if length is None:
            raise InputError("give --target-length (bytes) for the --target-* platform")
        targets.append(
            Observation(
                args.target_name,
                args.target_cpu,
                args.target_memmove * bytes_per_second(args.memmove_unit),
                length,
                None,
            )
        )
    if not targets:
        raise InputError(
            "nothing to predict: give --target CSV, --target-store or --target-cpu and --target-memmove"
        )
    res = _fit(args, obs)
    if args.method == "bootstrap" and res.boot is None:
        raise InputError(
            "--method bootstrap needs bootstrap replicates, but this fit has none "
            "(too few degrees of freedom, or --bootstrap 0)"
        )
    preds = [predict(res, t, method=args.method, seed=args.seed) for t in targets]
    _plot(args, res, preds)
    if args.json:
        io.print(
            json.dumps(
                {
                    "fit": res.to_json(),
                    "predictions": [
                        {**p.to_json(), "observed": t.rate} for p, t in zip(preds, targets)
                    ],
                },
                indent=2,
                default=_json_default,
            )
        )
        return 0
    print_fit(io, res)
    print_predictions(io, res, targets, preds, args.method, args.memmove_unit)
    return 0


def _json_default(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
