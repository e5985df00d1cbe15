"""perflab show ID — an experiment's design, status, environment, runs and their output."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, TextIO

from perflab.cli.common import add_store_option, open_store
from perflab.cli.lazy_rich import Table, Text
from perflab.report.safe_text import safe_text, terminal_safe

if TYPE_CHECKING:
    import argparse

    from perflab.api.experiments import Shown
    from perflab.cli.common import Subparsers
    from perflab.cli.io import CliIO
    from perflab.records import ExperimentRow, MetricDef, RunRow


def register(sub: Subparsers) -> None:
    p = sub.add_parser("show", help="show an experiment: status, environment, runs, outputs")
    p.add_argument("experiment", help="experiment id, name or 'last'")
    add_store_option(p)
    p.add_argument("--runs", action="store_true", help="list every run with its status and metrics")
    p.add_argument(
        "--run", type=int, metavar="N", help="show run N (1-based, execution order) with its output"
    )
    p.add_argument(
        "--artifact",
        metavar="NAME",
        help="print one stored artifact raw (e.g. /proc/cpuinfo, "
        "or stdout:phase:NAME with --run); on a terminal, "
        "control characters are shown escaped",
    )
    p.add_argument("--spec", action="store_true", help="print the experiment file as it was run")
    p.add_argument(
        "--warnings",
        action="store_true",
        help="every warning of the comparison (perflab compare's defaults) in full, one per line",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, io: CliIO) -> int:
    from perflab.api import experiments

    with open_store(args) as store:
        if args.warnings:
            e = store.experiment(args.experiment)
            return _show_warnings(io, experiments.comparison_warnings(store, e.id))
        if args.spec:
            e = store.experiment(args.experiment)
            text = e.spec_text or f"experiment {e.id} was imported; it has no spec\n"
            io.out.write(terminal_safe(text) if _is_tty(io.out) else text)  # exact for a file
            return 0
        shown = experiments.show_experiment(store, args.experiment)
        e = shown.experiment
        run_row = shown.run(args.run) if args.run is not None else None
        if args.artifact:
            _write_artifact(io.out, experiments.artifact(store, e.id, args.artifact, run_row))
            return 0
        if run_row is not None:
            arts = experiments.run_artifacts(store, e.id, run_row)
            return _show_one_run(args, io, shown, run_row, arts)
    if args.json:
        doc = _experiment_dict(e, shown.metric_defs, shown.environments)
        doc["runs"] = [_run_dict(r, shown.values) for r in shown.runs]
        io.out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    _show_experiment(io, e, shown.runs, shown.metric_defs, shown.environments)
    if args.runs:
        _show_runs(io, shown.runs, shown.values, shown.metric_defs)
    return 0


def _show_one_run(
    args: argparse.Namespace, io: CliIO, shown: Shown, run_row: RunRow, arts: dict[str, bytes]
) -> int:
    """`perflab show ID --run N`: its values, commands and artifacts."""
    if args.json:
        io.out.write(
            json.dumps(
                {
                    **_run_dict(run_row, shown.values),
                    "commands": _commands(arts),
                    "artifacts": {n: d.decode("utf-8", "replace") for n, d in arts.items()},
                },
                indent=2,
            )
            + "\n"
        )
        return 0
    _show_run(io, run_row, shown.values.get(run_row.id, {}), shown.metric_defs, arts)
    return 0


def _experiment_dict(
    e: ExperimentRow, defs: list[MetricDef], envs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """`show --json` of an experiment, but its runs."""
    return {
        "id": e.id,
        "name": e.name,
        "description": e.description,
        "status": e.status,
        "source": e.source,
        "baseline": e.baseline,
        "created_at": e.created_at,
        "finished_at": e.finished_at,
        "user": e.user,
        "controller_host": e.controller_host,
        "version": e.version,
        "source_commit": e.source_commit,
        "source_repo": e.source_repo,
        "settings": e.settings,
        "spec_path": e.spec_path,
        "metrics": [{"name": m.name, "unit": m.unit, "better": m.better} for m in defs],
        "environment": envs,
    }


def _run_dict(r: RunRow, metrics_by_run: dict[int, dict[str, float]]) -> dict[str, Any]:
    return {
        "run": r.order_index + 1,
        "block": r.block + 1,
        "cell": r.cell_key,
        "labels": r.cell,
        "variant": r.variant,
        "repetition": r.repetition,
        "warmup": r.warmup,
        "status": r.status,
        "reason": r.reason,
        "attempts": r.attempts,
        "host": r.host,
        "device": r.device,
        "started_at": r.started_at,
        "ended_at": r.ended_at,
        "metrics": metrics_by_run.get(r.id, {}),
    }


def _write_artifact(out: TextIO, data: bytes) -> None:
    """The artifact's bytes exactly, for a file or a pipe; escaped (`terminal_safe`) on a terminal."""
    if _is_tty(out):
        out.write(terminal_safe(data))
        out.flush()
    elif hasattr(out, "buffer"):
        out.flush()
        out.buffer.write(data)
        out.buffer.flush()
    else:
        out.write(data.decode("utf-8", "replace"))


def _show_warnings(io: CliIO, notes: list[Any]) -> int:
    """`perflab show ID --warnings`: what `perflab compare ID --verbose` lists under its tables."""
    from perflab.report.warning_groups import print_warnings

    print_warnings(io.console, notes)
    return 0


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "–"


def _show_experiment(
    io: CliIO,
    e: ExperimentRow,
    runs: list[RunRow],
    defs: list[MetricDef],
    envs: dict[str, dict[str, Any]],
) -> None:
    c = io.console
    c.print(
        safe_text(f"experiment {e.id}: {e.name}", "bold", one_line=True)
        + safe_text(f" — {e.description}" if e.description else "")
    )
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for k, v in _experiment_rows(e, runs, defs):
        t.add_row(safe_text(k), safe_text(v))
    c.print(t)
    _show_environments(io, envs)
    failed = [r for r in runs if r.status in ("failed", "timeout")]
    if failed:
        c.print()
        c.print(Text(f"{len(failed)} failed run(s):", style="bold red"))
        for r in failed[:20]:
            c.print(
                safe_text(
                    f"  run {r.order_index + 1} ({r.cell_key} · {r.variant} #{r.repetition}) "
                    f"{r.status}: {r.reason}",
                    one_line=True,
                )
            )
        if len(failed) > 20:
            c.print(f"  … and {len(failed) - 20} more (perflab show {e.id} --runs)")


def _who(e: ExperimentRow) -> str:
    """Who stored the experiment, from which controller: ``ada on lab-pc``."""
    return f"{e.user or 'unknown user'} on {e.controller_host or 'an unknown host'}"


def _position(e: ExperimentRow) -> str:
    """Its place in a series: ``v1.5 (commit 1a2b3c… of /src/app)``."""
    source = " of ".join(
        x for x in (e.source_commit and f"commit {e.source_commit}", e.source_repo) if x
    )
    if not e.version:
        return f"– ({source})"
    return e.version + (f" ({source})" if source else "")


def _experiment_rows(
    e: ExperimentRow, runs: list[RunRow], defs: list[MetricDef]
) -> list[tuple[str, str]]:
    """(label, value) of the experiment's status, design and metrics."""
    from perflab.report.numbers import describe_overhead, describe_repetitions

    counts: dict[str, int] = {}
    for r in runs:
        counts[r.status] = counts.get(r.status, 0) + 1
    s = e.settings
    rows = [
        ("status", f"{e.status} ({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})"),
        ("source", e.source + (f" ({e.spec_path})" if e.spec_path else "")),
        ("created", _when(e.created_at)),
        *([("stored by", _who(e))] if e.user or e.controller_host else []),
        *([("version", _position(e))] if e.version or e.source_commit or e.source_repo else []),
        ("finished", _when(e.finished_at)),
        ("baseline", e.baseline),
        ("variants", ", ".join(v["name"] for v in s.get("variants", []))),
        (
            "matrix",
            "; ".join(
                f"{p}: {', '.join(dict.fromkeys(c['labels'][p] for c in s.get('cells', [])))}"
                for p in s.get("params", [])
            )
            or "–",
        ),
        (
            "metrics",
            ", ".join(
                f"{m.name}{f' ({m.unit})' if m.unit else ''} {m.better} is better" for m in defs
            ),
        ),
    ]
    if "repetitions" in s:
        rows.append(
            (
                "design",
                (
                    f"{describe_repetitions(s['repetitions'])} + {s.get('warmup', 0)} warm-up, "
                    f"order {s.get('order')} (seed {s.get('seed')})"
                ),
            )
        )
    if s.get("adaptive", {}).get("summary"):
        rows.append(("adaptive", s["adaptive"]["summary"].removeprefix("adaptive repetitions: ")))
    for name, source in s.get("overheads", {}).items():
        rows.append(
            ("overhead", f"{name}: net of {describe_overhead(source)}, measured in each run")
        )
    return rows


def _show_environments(io: CliIO, envs: dict[str, dict[str, Any]]) -> None:
    """Each host's captured environment, one table per host."""
    from perflab.report.environment import environment_rows

    c = io.console
    for host, info in envs.items():
        c.print()
        c.print(safe_text(f"environment of {host}", "bold", one_line=True))
        et = Table(show_header=False, box=None, pad_edge=False)
        et.add_column(style="bold", no_wrap=True)
        et.add_column()
        for k, v in environment_rows(info):
            et.add_row(safe_text(str(k), one_line=True), safe_text(str(v)))
        c.print(et)


def _show_runs(
    io: CliIO,
    runs: list[RunRow],
    metrics_by_run: dict[int, dict[str, float]],
    defs: list[MetricDef],
) -> None:
    """The runs as tables that fit the terminal and never hide a value: every value keeps
    its whole width (headers fold onto more lines), and metrics that do not fit beside
    the run's columns go to another table below, with the run's columns again. Why a run
    failed is a line of its own under the tables (a reason is a sentence: squeezed into a
    column it folded a character a line)."""
    from perflab.report.numbers import fmt_number

    pooled = any(r.device for r in runs)  # a pool's: which device each ran on
    head = ("run", "block", "cell", "variant", "rep", "status", *(("device",) if pooled else ()))
    rows = [
        (
            [
                str(r.order_index + 1),
                str(r.block + 1),
                r.cell_key,
                r.variant,
                f"{r.repetition}{'w' if r.warmup else ''}",
                r.status,
                *((r.device or "–",) if pooled else ()),
            ],
            [fmt_number(metrics_by_run.get(r.id, {}).get(m.name)) for m in defs],
            r.reason or "",
        )
        for r in runs
    ]
    names = [f"{m.name}{f' ({m.unit})' if m.unit else ''}" for m in defs]

    def width(i: int, title: str, values: list[str]) -> int:
        word = max((len(w) for w in title.split()), default=1)
        return max([word, *(len(v) for v in values)])

    fixed = [width(i, h, [row[0][i] for row in rows]) for i, h in enumerate(head)]
    metric_w = [width(i, n, [row[1][i] for row in rows]) for i, n in enumerate(names)]
    room = max(20, io.console.width - sum(w + 3 for w in fixed) - 1)
    chunks: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(metric_w):
        if chunks[-1] and used + w + 3 > room:
            chunks.append([])
            used = 0
        chunks[-1].append(i)
        used += w + 3
    for chunk in chunks:
        t = Table(header_style="bold")
        for i, col in enumerate(head):
            right = col in ("run", "block", "rep")
            t.add_column(
                col, justify="right" if right else "left", overflow="fold", min_width=fixed[i]
            )
        for i in chunk:
            t.add_column(names[i], justify="right", overflow="fold", min_width=metric_w[i])
        for run_cells, values, _ in rows:
            t.add_row(
                *(safe_text(v, one_line=True) for v in run_cells), *(values[i] for i in chunk)
            )
        io.console.print()
        io.console.print(t)
    reasons = [(cells[0], reason) for cells, _, reason in rows if reason]
    if reasons:
        io.console.print()
        for run, reason in reasons:
            io.console.print(safe_text(f"run {run}: {reason}", one_line=True))


def _show_run(
    io: CliIO,
    r: RunRow,
    metrics: dict[str, float],
    defs: list[MetricDef],
    arts: dict[str, bytes],
) -> None:
    from perflab.report.numbers import fmt_number

    c = io.console
    c.print(
        safe_text(
            f"run {r.order_index + 1}: {r.cell_key} · {r.variant} #{r.repetition}"
            f"{' (warm-up)' if r.warmup else ''} — {r.status}",
            "bold",
            one_line=True,
        )
    )
    if r.reason:
        c.print(safe_text(f"reason: {r.reason}", one_line=True))
    dur = f"{r.ended_at - r.started_at:.3f} s" if r.started_at and r.ended_at else "–"
    c.print(
        safe_text(
            f"host {r.host or '–'}{f', device {r.device}' if r.device else ''}, "
            f"started {_when(r.started_at)}, took {dur}, attempts {r.attempts}",
            one_line=True,
        )
    )
    for m in defs:
        if m.name in metrics:
            c.print(
                safe_text(
                    f"  {m.name} = {fmt_number(metrics[m.name])} {m.unit}".rstrip(), one_line=True
                )
            )
    commands = _commands(arts)
    if commands is not None:
        _show_commands(io, commands)
    for name, data in arts.items():
        if name == COMMANDS and commands is not None:
            continue  # shown above; raw with --artifact commands
        c.print()
        c.print(safe_text(f"── {name} ({len(data)} bytes)", "bold", one_line=True))
        # program output: shown, never obeyed (escape sequences written visibly, [markup] literal)
        c.print(
            safe_text(data.decode("utf-8", "replace").rstrip("\n")),
            no_wrap=True,
            overflow="ignore",
            crop=False,
        )


#: The run artifact of what each command step ran (absent from runs stored before it).
COMMANDS = "commands"


def _commands(arts: dict[str, bytes]) -> list[dict[str, Any]] | None:
    """The run's ``commands`` artifact: one entry per command step (step, host, command, env);
    None for a run stored without it (or one it cannot read)."""
    data = arts.get(COMMANDS)
    if data is None:
        return None
    try:
        entries = json.loads(data)
    except ValueError:
        return None
    if not isinstance(entries, list) or not all(isinstance(x, dict) for x in entries):
        return None
    return entries


def _show_commands(io: CliIO, commands: list[dict[str, Any]]) -> None:
    """Each step's command as run ({param}s substituted), its host and the variables perflab
    added to its environment; all of it shown, never obeyed (`terminal_safe`)."""
    c = io.console
    c.print()
    n = len(commands)
    c.print(safe_text(f"── commands ({n} step{'' if n == 1 else 's'})", "bold", one_line=True))
    for entry in commands:
        c.print(safe_text(f"{entry.get('step', '?')} on {entry.get('host') or '–'}", one_line=True))
        if entry.get("note"):
            c.print(safe_text(f"  ({entry['note']})", "dim", one_line=True))
        if entry.get("measured_by"):
            c.print(safe_text(f"  measured by {entry['measured_by']}", "dim", one_line=True))
        lines = str(entry.get("command", "")).split("\n")
        for k, line in enumerate(lines):
            c.print(
                safe_text(("  $ " if k == 0 else "    ") + line, one_line=True),
                no_wrap=True,
                overflow="ignore",
                crop=False,
            )
        env = entry.get("env") or {}
        if isinstance(env, dict):
            for name, value in env.items():
                c.print(
                    safe_text(f"  env {name}={value}", one_line=True),
                    no_wrap=True,
                    overflow="ignore",
                    crop=False,
                )
