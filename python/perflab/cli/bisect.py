"""perflab bisect SPEC --good REV --bad REV — the commit that made a metric worse, found
with one experiment per step (`perflab.api.bisecting`); prints each step and the end."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perflab.cli.common import add_store_option
from perflab.cli.exit_codes import EXIT_INTERRUPTED, EXIT_NOT_FOUND

if TYPE_CHECKING:
    from perflab.api.bisect_verdict import Change
    from perflab.api.bisecting import BisectPlan, BisectResult, BisectStep
    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO
    from perflab.commits.git import Commit
    from perflab.execution.observer import Observer


def _steps(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return int(text)


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit that made a metric worse (one experiment per step)",
        description="Bisect the first-parent commits between --good and --bad: each step "
        "runs one experiment of the spec with variants good (baseline), candidate and bad, "
        "each building {commit} in its setup, until the candidate's verdict against both "
        "ends is clear; prints each step and the first bad commit with its change. Runs "
        "only the spec's commands and git on --repo.",
    )
    p.add_argument("spec", help="experiment file whose baseline variant builds {commit}")
    p.add_argument("--good", required=True, metavar="REV", help="a commit without the regression")
    p.add_argument("--bad", required=True, metavar="REV", help="a later commit with it")
    p.add_argument(
        "--repo", metavar="DIR", default=None, help="the git repository (default: this folder)"
    )
    p.add_argument(
        "--metric", metavar="NAME", default=None, help="the metric bisected (default: the first)"
    )
    add_store_option(p)
    p.add_argument("--max-steps", type=_steps, default=None, metavar="N", help="stop after N steps")
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on with the same bisect interrupted before: the steps it finished are read "
        "back from the store, the one cut short is continued",
    )
    p.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    p.set_defaults(handler=bisect)


def bisect(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api.bisecting import BisectRequest
    from perflab.api.bisecting import bisect as run_bisect

    request = BisectRequest(
        spec=args.spec,
        good=args.good,
        bad=args.bad,
        repo=args.repo,
        metric=args.metric,
        store=args.store or None,
        max_steps=args.max_steps,
        resume=args.resume,
    )
    printer = StepPrinter(io, to_stderr=args.json)
    try:
        result = run_bisect(request, printer, _progress(io))
    except KeyboardInterrupt as e:
        io.err.write(f"perflab: {str(e) or 'interrupted'}\n")
        return EXIT_INTERRUPTED
    if args.json:
        doc = _finite(result.to_dict())
        io.print(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        printer.summary(result)
    return 0 if result.found else EXIT_NOT_FOUND


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null (JSON has neither), as every perflab
    JSON document writes them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _progress(io: CliIO) -> Callable[[], Observer] | None:
    """A progress bar per step's experiment on a terminal; nothing per run otherwise (the
    step lines are the log)."""
    if not io.err_console.is_terminal:
        return None
    from perflab.cli.progress import ConsoleObserver

    return lambda: ConsoleObserver(io.err_console)


class StepPrinter:
    """Prints the bisect as it goes (`perflab.api.bisecting.BisectObserver`): the range, a
    line per step started, its evidence and decision; the summary at the end."""

    def __init__(self, io: CliIO, *, to_stderr: bool = False):
        self.io, self.to_stderr = io, to_stderr
        self.expected = 0

    def line(self, text: str = "") -> None:
        from perflab.report.safe_text import terminal_safe

        stream = self.io.err if self.to_stderr else self.io.out
        stream.write(terminal_safe(text) + "\n")
        stream.flush()

    def started(self, plan: BisectPlan) -> None:
        self.expected = plan.expected_steps
        n = len(plan.commits)
        self.line(
            f"bisecting {n} commit{'s' if n != 1 else ''} after good {plan.good.short} up to "
            f"bad {plan.bad.short} on {plan.metric} ({plan.better} is better): "
            f"about {self.expected} step{'s' if self.expected != 1 else ''}"
        )

    def step_started(self, number: int, candidate: Commit, good: Commit, bad: Commit) -> None:
        self.line(
            f"step {number}/≈{self.expected}: {candidate.short} {candidate.subject}"
            f"  (good {good.short}, bad {bad.short})"
        )

    def step_finished(self, step: BisectStep) -> None:
        ev = step.evidence
        ids = ", ".join(str(i) for i in step.experiments)
        if ev.decision in ("skip", "end_failed"):
            self.line(f"  → {ev.decision}: {ev.why} (experiment {ids})")
            return
        self.line(
            f"  vs good {_change(ev.vs_good)} · vs bad {_change(ev.vs_bad)} · "
            f"bad vs good {_change(ev.ends)}"
        )
        self.line(
            f"  → {ev.decision}: {ev.why} ({ev.blocks} blocks, target ±{step.target:.2%}, "
            f"experiment {ids})"
        )

    def summary(self, result: BisectResult) -> None:
        plan, n = result.plan, len(result.steps)
        self.line()
        if result.found and result.first_bad is not None:
            bad = result.first_bad
            self.line(f"first bad commit: {bad.id} {bad.subject}")
            if result.change is not None and result.parent is not None:
                self.line(
                    f"  {plan.metric} {_change(result.change)} against its parent "
                    f"{result.parent.short} (experiment {result.change_experiment}: "
                    f"perflab compare {result.change_experiment} --method paired)"
                )
        else:
            self.line(f"no first bad commit: {result.message}")
            if result.suspects:
                self.line(f"  it is one of {len(result.suspects)} commits:")
                for c in result.suspects:
                    self.line(f"    {c.short} {c.subject}")
        skipped = f" ({result.skipped} skipped)" if result.skipped else ""
        self.line(
            f"{n} step{'s' if n != 1 else ''}{skipped} for {len(plan.commits)} commits; "
            f"⌈log2({len(plan.commits)})⌉ = {plan.expected_steps}"
        )


def _change(change: Change) -> str:
    """``+8.1% +[7.0, 9.2]% worse``, ``NS (-0.3% [-1.2, +0.6]%)``, or ``n/a``."""
    from perflab.report.numbers import fmt_pct, fmt_pct_interval

    c = change.comparison
    if c is None or not c.defined:
        return "n/a"
    estimate = fmt_pct(c.estimate) + " " if c.relative else ""
    if change.verdict == "ns":
        return f"NS ({estimate}{fmt_pct_interval(c)})"
    return f"{estimate}{fmt_pct_interval(c)} {change.verdict}"
