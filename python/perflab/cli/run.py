"""perflab run SPEC — execute an experiment (or resume one) and print its TLDR."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from perflab.cli.common import add_store_option
from perflab.cli.exit_codes import EXIT_INTERRUPTED, EXIT_RUNS_FAILED
from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO
    from perflab.execution.experiment import OpenedExperiment
    from perflab.spec import Spec


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {text!r}")
    return int(text)


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "run",
        help="run an experiment file (continues an unfinished one)",
        description="Execute the experiment's plan, storing every run as it finishes. "
        "Re-running the same spec continues an unfinished experiment; "
        "--new starts over.",
    )
    p.add_argument("spec", nargs="?", help="experiment file (TOML)")
    add_store_option(p)
    p.add_argument("--resume", metavar="ID", help="continue the interrupted experiment ID")
    p.add_argument(
        "--new", action="store_true", help="start a new experiment even if one is unfinished"
    )
    p.add_argument(
        "--version",
        metavar="V",
        default=None,
        help="the version measured (v1.5, a kernel release, a date), over the spec's "
        "`version`: the experiment's place in a series (perflab history NAME)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--no-compare", action="store_true", help="do not print the TLDR at the end")
    p.add_argument(
        "--max-failures",
        type=_count,
        default=None,
        metavar="N",
        help="stop when N runs in a row, or the first N of a variant, fail the same way "
        "(default: the spec's max_failures, 3; 0 never stops)",
    )
    p.add_argument(
        "--profile",
        action="store_const",
        const="process",
        default=False,
        help="record a perf profile (perf record -g) of every measured phase's processes; "
        "the report shows flame graphs and the functions whose share of the samples changed",
    )
    p.add_argument(
        "--profile-system",
        dest="profile",
        action="store_const",
        const="system",
        help="as --profile, of the whole host while each measured phase runs (perf record "
        "-a; kv phases too: the server under test when it runs on this machine)",
    )
    p.add_argument(
        "--export",
        action="append",
        default=[],
        metavar="FILE",
        help="write the comparison to FILE (.json, .csv or .md), rewritten after every run "
        "so that a crash loses nothing (repeatable)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.running import RunRequest, check_exports, run_experiment
    from perflab.cli.progress import ConsoleObserver
    from perflab.spec import load_spec

    if (args.spec is None) == (args.resume is None):
        raise InputError("give an experiment file, or --resume ID")
    spec = load_spec(args.spec) if args.spec else None
    check_exports(args.export)  # unknown export formats fail before anything runs
    if args.dry_run:
        if spec is None:
            raise InputError("--dry-run needs an experiment file")
        _print_plan(spec, io, args.store)
        return 0

    def opened(found: OpenedExperiment) -> None:
        if args.spec and found.resumed:
            io.err.write(
                f"perflab: continuing unfinished experiment {found.id} of this spec "
                f"(use --new to start over)\n"
            )

    request = RunRequest(
        spec=spec,
        store=args.store or None,
        resume=args.resume,
        new=args.new,
        max_failures=args.max_failures,
        export=tuple(args.export),
        profile=args.profile,
        version=args.version,
    )
    ran = run_experiment(
        request, ConsoleObserver(io.err_console), opened=opened, compare=not args.no_compare
    )
    eid = ran.experiment_id
    if ran.outcome.status == "interrupted":
        io.err.write(f"perflab: interrupted; resume with: perflab run --resume {eid}\n")
        return EXIT_INTERRUPTED
    if ran.comparison is not None:
        from perflab.report.formats import View, comparison_format

        comparison_format("terminal").comparison(ran.comparison, View(io.console, summaries=False))
    if ran.outcome.status == "aborted" or ran.failed:
        what = "stopped early" if ran.outcome.status == "aborted" else "finished"
        io.err.write(
            f"perflab: experiment {eid} {what} with {ran.failed} failed run"
            f"{'s' if ran.failed != 1 else ''} and {ran.ok} ok; see `perflab show {eid} --runs`"
            + (" (nothing to compare)" if not ran.ok else "")
            + "\n"
        )
        return EXIT_RUNS_FAILED
    return 0


def _print_plan(spec: Spec, io: CliIO, store_path: str | None) -> None:
    """The plan, run by run, then its design, order and expected duration; runs nothing and
    writes nothing (the store, if there is one, is only read)."""
    from perflab.api.planning import host_lines, preview
    from perflab.durations import format_duration

    m = spec.model
    view = preview(spec, store_path)
    plan = view.plan
    measured = sum(1 for r in plan if not r.warmup)
    io.print(
        f"{m.name}: {len(plan)} runs ({measured} measured, {len(plan) - measured} warm-up), "
        f"order {m.order} (seed {m.seed}), baseline {m.baseline}"
        + (f", timeout {format_duration(m.timeout)} per run" if m.timeout else "")
    )
    if m.adaptive:
        a = m.adaptive
        io.print(
            f"adaptive repetitions: {a.min} blocks planned, then one more at a time until every "
            f"interval is within ±{a.target_ci:.2%} (at most {a.max} blocks)"
        )
    for host, count in view.boots.items():
        io.print(f"host {host}: up to {count} boot{'s' if count != 1 else ''} (kernel variants)")
    for line in host_lines(spec):
        io.print(line)
    io.print(
        f"phases: {', '.join(p.name + ('' if p.measure else ' (unmeasured)') for p in m.phase)}; "
        f"metrics: {', '.join(x.name for x in m.metric)}"
    )
    width = len(str(len(plan)))
    for r in plan:
        cell = "" if r.cell.key == "-" else f"{r.cell.key}  "
        io.print(
            f"{r.order_index + 1:>{width}}  block {r.block + 1}  {cell}{r.variant} "
            f"#{r.repetition}{' (warm-up)' if r.warmup else ''}"
        )
    io.print()
    cells, variants = view.cells, len(m.variant)
    reps = m.initial_repetitions
    io.print(
        f"{_n(cells, 'cell')} × {_n(variants, 'variant')} × ({_n(reps, 'repetition')}"
        f"{' planned' if m.adaptive else ''} + {m.warmup} warm-up) = {_n(len(plan), 'run')}"
    )
    io.print(_order_line(spec))
    path, estimate = view.store, view.estimate
    if estimate is None:
        io.print(f"no earlier runs of this spec in the store ({path}): no estimate")
        return
    medians = ", ".join(
        f"{v.variant} {format_duration(v.median_seconds)} × {v.planned}"
        + ("" if v.measured_runs else " (never ran: median of all variants)")
        for v in estimate.variants
    )
    io.print(
        f"estimated duration: {format_duration(estimate.total_seconds)} "
        f"({format_duration(estimate.runs_seconds)} of runs: {medians}; "
        f"{format_duration(estimate.overhead_seconds)} around them: "
        f"{format_duration(estimate.between_runs_seconds)} between runs, "
        f"{format_duration(estimate.start_seconds)} to start, "
        f"{format_duration(estimate.end_seconds)} to finish)"
    )
    if estimate.max_total_seconds is not None:
        io.print(
            f"  if every adaptive repetition runs ({_n(estimate.max_runs or 0, 'run')}): "
            f"up to {format_duration(estimate.max_total_seconds)}"
        )
    ids = ", ".join(f"#{i}" for i in estimate.experiments)
    io.print(
        f"  from the median run time of each variant in {_n(len(estimate.experiments), 'earlier experiment')} "
        f"with {'the same spec text' if estimate.matched_by == 'spec text' else 'the same name'} "
        f"({ids}) in {path}"
    )


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _order_line(spec: Spec) -> str:
    """How the runs are ordered, in words (no "block": callers count the plan's lines by it)."""
    m = spec.model
    if m.order == "sequential":
        return (
            "order sequential: cell by cell, variant by variant, repetitions back to back "
            "(warm-ups first; the seed is not used)"
        )
    kernels = any(v.kernel or v.cmdline for v in m.variant)
    return (
        f"order interleaved (seed {m.seed}): each repetition runs every cell × variant once, "
        f"shuffled by (seed, repetition)"
        + (", a variant's runs of a repetition together (fewer boots)" if kernels else "")
        + "; warm-ups first"
    )
