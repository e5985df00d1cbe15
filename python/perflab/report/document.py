"""The report model: a `CompareResult` plus what the store holds about its runs, laid
out as sections in a fixed order (issue 6):

  verdict → TLDR → relative change per metric → distributions of runs → runs in
  execution order → latency percentile spectra → metrics against numeric parameters →
  warnings and failed runs → environment → run output → the spec as run → how to reproduce.

Statistics come from the `CompareResult` (computed once in `stats/` through
`analysis.compare`); this module only chooses what to show and in which words, as the
blocks of `blocks.py` (the comparison's tables come from `tables.py`, as for
``perflab compare``). Writers (`html.py`, `markdown.py`, `json_doc.py`) draw the same
`Report`; `output.py` writes it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from perflab._version import __version__
from perflab.analysis.compare import CompareResult, compare_dataset
from perflab.analysis.cross import RunOrigin, compare_cross, cross_dataset, single_origin
from perflab.analysis.dataset import load_dataset
from perflab.analysis.scaling import ScalingOptions, ScalingResult, fit_dataset
from perflab.report import plots
from perflab.report.blocks import (
    Block,
    Bullets,
    Cell,
    Code,
    Details,
    Para,
    Plot,
    Section,
    Span,
    Table,
)
from perflab.report.format import describe_overhead, method_words
from perflab.report.palette import COLOR_NAMES, variant_colors
from perflab.report.rundata import RunData, load_run_data
from perflab.report.scaling_table import method_line, model_text, per_what, scaling_tables
from perflab.report.tables import note_lines, summary_tables, tldr_table
from perflab.report.verdict import verdict_paragraphs
from perflab.store import ExperimentRow, Store, default_store_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Report:
    result: CompareResult
    runs: RunData
    experiments: list[ExperimentRow]  # the experiment, or (A, B) for a two-experiment comparison
    colors: dict[str, str]
    title: str
    description: str
    meta: list[str]  # one-line facts under the title
    verdict: list[Para]
    reproduce: list[tuple[str, str]]  # (what it does, command line)
    generated_at: str
    sections: list[Section] = field(default_factory=list)
    scaling: ScalingResult | None = None  # `--scaling PARAM`: the fits of cost = a + b·PARAM^k

    @property
    def cross(self) -> bool:
        return len(self.experiments) > 1

    def plots(self) -> list[Plot]:
        """Every plot of the report, in reading order."""
        out: list[Plot] = []

        def walk(blocks: Iterable[Block]) -> None:
            for b in blocks:
                if isinstance(b, Plot):
                    out.append(b)
                elif isinstance(b, (Section, Details)):
                    walk(b.blocks)

        for s in self.sections:
            walk(s.blocks)
        return out


# ----- entry points ---------------------------------------------------------------------------


def report_for(
    store: Store, ref: str | int, *, scaling: ScalingOptions | None = None, **options: Any
) -> Report:
    """The report of one stored experiment (id, name or ``last``); options as `compare_dataset`'s;
    ``scaling`` adds a section with the scaling fits (`perflab.analysis.scaling`)."""
    data = load_dataset(store, ref)
    result = compare_dataset(data, **options)
    fits = (
        fit_dataset(data, scaling, confidence=result.confidence, threshold=result.threshold)
        if scaling
        else None
    )
    return build_report(store, result, single_origin(data), [data.experiment], fits)


def report_for_pair(
    store: Store,
    ref_a: str | int,
    ref_b: str | int,
    *,
    pairs: list[tuple[str, str]] | None = None,
    scaling: ScalingOptions | None = None,
    **options: Any,
) -> Report:
    """Experiment B against experiment A as the baseline (see `perflab.analysis.cross`)."""
    cross = cross_dataset(store, ref_a, ref_b, pairs)
    result = compare_cross(cross, **options)
    fits = (
        fit_dataset(
            cross.dataset, scaling, confidence=result.confidence, threshold=result.threshold
        )
        if scaling
        else None
    )
    return build_report(store, result, cross.origins, [cross.a, cross.b], fits)


def build_report(
    store: Store,
    result: CompareResult,
    origins: list[RunOrigin],
    experiments: list[ExperimentRow],
    scaling: ScalingResult | None = None,
) -> Report:
    data = result.dataset
    runs = load_run_data(store, origins, data)
    colors = variant_colors(data.variants)
    e = data.experiment
    report = Report(
        result=result,
        runs=runs,
        experiments=experiments,
        colors=colors,
        title=e.name
        if len(experiments) == 1
        else f"{experiments[1].name} #{experiments[1].id} vs "
        f"{experiments[0].name} #{experiments[0].id}",
        description=e.description,
        meta=_meta(result, runs, experiments),
        verdict=verdict_paragraphs(result),
        reproduce=_reproduce(store, result, experiments, scaling),
        generated_at=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip(),
        scaling=scaling,
    )
    return _with_sections(report)


# ----- sections -------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _with_sections(r: Report) -> Report:
    result, data = r.result, r.result.dataset
    colors = r.colors
    metrics = data.metrics
    sections: list[Section] = []
    n = [0]

    def plot(
        kind: str, name: str, title: str, caption: str, alt: str, make: Callable[[], Figure]
    ) -> Plot:
        n[0] += 1
        return Plot(f"{n[0]:02d}-{kind}-{_slug(name)}", title, caption, alt, make)

    sections.append(Section("verdict", "Verdict", tuple(r.verdict) + (_variants_table(r),)))

    sections.append(
        Section(
            "tldr",
            "TLDR",
            (
                tldr_table(result),
                Para.of(
                    "Each cell: the ",
                    Span(f"{result.confidence:.0%}", strong=True),
                    " confidence interval of the relative change of the mean against ",
                    Span(data.baseline, strong=True),
                    ", e.g. +[12.2, 16.2]% (an increase between 12.2% and 16.2%) "
                    "or -[20.0, 23.0]% (a decrease); NS when the interval contains zero. Bounds are rounded "
                    "outward. ↑/↓: higher/lower is better; green = better, red = worse.",
                ),
            ),
        )
    )

    blocks: list[Block] = []
    for m in metrics:
        blocks.append(
            plot(
                "change",
                m.name,
                f"{m.name}: relative change",
                f"Relative change of {m.name} against {data.baseline} per cell, with its "
                f"{result.confidence:.0%} interval; the vertical line is no change.",
                f"Interval plot of the relative change of {m.name} for each matrix cell; "
                f"the TLDR table above gives the same intervals as text.",
                functools.partial(plots.relative_change, result, m, colors),
            )
        )
    sections.append(Section("change", "Relative change per metric", tuple(blocks)))

    blocks = []
    summary_by_metric = {m.name: t for m, t in zip(metrics, summary_tables(result, colors))}
    for m in metrics:
        blocks.append(
            plot(
                "runs",
                m.name,
                f"{m.name}: distribution of runs",
                f"Each point is one measured run (warm-ups excluded); the black bar is the mean "
                f"with its {result.confidence:.0%} confidence interval. Each cell has its own y axis.",
                f"Strip plot of every run's {m.name} ({m.unit}) per variant and cell.",
                functools.partial(plots.distribution, result, m, colors),
            )
        )
        blocks.append(summary_by_metric[m.name])
    sections.append(Section("distributions", "Distributions of runs", tuple(blocks)))

    blocks = []
    if r.runs.runs:
        for m in metrics:
            blocks.append(
                plot(
                    "order",
                    m.name,
                    f"{m.name}: runs in execution order",
                    "Runs in the order they ran, coloured by variant; hollow markers are warm-up "
                    "runs, which the statistics leave out. A trend or a step is drift of the "
                    "machine, not a difference between variants"
                    + (
                        " (interleaved blocks spread it over every variant)."
                        if data.experiment.settings.get("order", "interleaved") == "interleaved"
                        and not r.cross
                        else "."
                    ),
                    f"Scatter plot of {m.name} ({m.unit}) against run number, one panel per cell.",
                    functools.partial(plots.run_order, result, r.runs, m, colors),
                )
            )
    else:
        blocks.append(Para.of("No per-run data is stored for this experiment."))
    sections.append(Section("order", "Runs in execution order", tuple(blocks)))

    phases = list(dict.fromkeys(s.phase for s in r.runs.spectra))
    if phases:
        blocks = []
        cells = [k for k, _ in data.cells]
        for phase in phases:
            totals: dict[str, list[int]] = {}
            for s in r.runs.spectra:
                if s.phase == phase:
                    t = totals.setdefault(s.variant, [0, 0])
                    t[0] += s.requests
                    t[1] += s.runs
            reqs = "; ".join(f"{v}: {q:,} requests in {k} runs" for v, (q, k) in totals.items())
            blocks.append(
                plot(
                    "latency",
                    phase,
                    f"latency spectrum of phase {phase}",
                    "Latency at each percentile from the stored HDR histograms: bold lines merge "
                    "every measured run's histogram (the right way to pool percentiles), thin lines "
                    f"are single runs. x: 90%, 99%, 99.9%… equally spaced. {reqs}.",
                    f"Line plot of latency in ms against percentile for phase {phase}, per variant.",
                    functools.partial(
                        plots.spectrum, phase, r.runs.spectra, data.variants, cells, colors
                    ),
                )
            )
        sections.append(Section("latency", "Latency percentile spectra", tuple(blocks)))

    if r.runs.numeric_params:
        blocks = []
        for param, values in r.runs.numeric_params.items():
            for m in metrics:
                blocks.append(
                    plot(
                        "scaling",
                        f"{m.name}-{param}",
                        f"{m.name} against {param}",
                        f"Mean of {m.name} at each value of {param} with its "
                        f"{result.confidence:.0%} confidence band (left), and the relative change "
                        f"against {data.baseline} with its interval (right).",
                        f"Line plots of {m.name} and of its relative change against {param}.",
                        functools.partial(plots.scaling, result, param, values, m, colors),
                    )
                )
        sections.append(Section("scaling", "Metrics against the matrix parameters", tuple(blocks)))

    if r.scaling is not None:
        sections.append(_scaling_fit_section(r))
    sections.append(_warnings_section(r))
    if r.runs.environment is not None:
        sections.append(_environment_section(r))
    if r.runs.outputs:
        sections.append(_output_section(r))
    sections.append(_spec_section(r))
    sections.append(
        Section(
            "reproduce",
            "How to reproduce",
            (
                Code("\n".join(f"# {what}\n{cmd}" for what, cmd in r.reproduce), "sh"),
                Para.of(f"Generated by perflab {__version__} on {r.generated_at}."),
            ),
        )
    )
    return dataclasses.replace(r, sections=sections)


def _variants_table(r: Report) -> Table:
    data = r.result.dataset
    described = {
        v.get("name"): v.get("description", "")
        for v in data.experiment.settings.get("variants", [])
    }
    rows: list[tuple[Cell, ...]] = []
    for v in data.variants:
        n = sum(1 for p in r.runs.runs if p.variant == v and not p.warmup)
        rows.append(
            (
                Cell(v + (" (baseline)" if v == data.baseline else "")),
                Cell(COLOR_NAMES.get(r.colors[v], r.colors[v]), color=r.colors[v]),
                Cell(described.get(v, "")),
                Cell(str(n)),
            )
        )
    if not any(described.get(v) for v in data.variants):  # no descriptions: no empty column
        rows = [(a, b, d) for a, b, _c, d in rows]
        return Table(
            "Variants, in the colours every plot uses",
            ("variant", "colour", "measured runs"),
            tuple(rows),
            (False, False, True),
            css_class="variants",
        )
    return Table(
        "Variants, in the colours every plot uses",
        ("variant", "colour", "description", "measured runs"),
        tuple(rows),
        (False, False, False, True),
        css_class="variants",
    )


def _scaling_fit_section(r: Report) -> Section:
    fit = r.scaling
    assert fit is not None
    blocks: list[Block] = [
        Para.of(
            f"cost = {model_text(fit)} fitted per variant to the mean of each {fit.param} value (weighted by its "
            f"standard error); the per-unit cost is b·{fit.param}^(k−1) — the size-dependent cost divided by the "
            f"size, per {per_what(fit.param)} — at the size shown, and the last column compares it with "
            f"{fit.dataset.baseline}'s."
        )
    ]
    for table in scaling_tables(fit, r.colors):
        blocks.append(table.table)
        if table.notes:
            blocks.append(Bullets(tuple(Para.of(n) for n in table.notes)))
    general = [n.warning.message for n in fit.notes if not n.metric]
    if general:
        blocks.append(Bullets(tuple(Para.of(n) for n in general)))
    blocks.append(Para.of(method_line(fit)))
    return Section("scaling-fit", f"Scaling fit over {fit.param}", tuple(blocks))


def _warnings_section(r: Report) -> Section:
    lines = note_lines(r.result)
    blocks: list[Block] = []
    if lines:
        blocks.append(Bullets(tuple(Para.of(line) for line in lines)))
    else:
        blocks.append(
            Para.of(
                "None: every cell has enough successful runs and the statistics raised no warning."
            )
        )
    failed = r.runs.failed
    if failed:
        rows = tuple(
            (
                Cell(str(f.run) if not r.cross else f"#{f.experiment_id}/{f.run}"),
                Cell(f.cell_key),
                Cell(f.variant, color=r.colors.get(f.variant)),
                Cell(str(f.repetition)),
                Cell(f.status),
                Cell(f.reason),
            )
            for f in failed[:100]
        )
        blocks.append(
            Table(
                f"Failed runs ({len(failed)}), left out of the statistics",
                ("run", "cell", "variant", "rep", "status", "reason"),
                rows,
                (True, False, False, True, False, False),
                css_class="failed",
                note="" if len(failed) <= 100 else f"first 100 of {len(failed)}",
            )
        )
    return Section("warnings", "Warnings", tuple(blocks))


def _environment_section(r: Report) -> Section:
    env = r.runs.environment
    assert env is not None
    cols = env.columns
    blocks: list[Block] = []
    if len(cols) == 1:
        c = cols[0]
        blocks.append(
            Para.of(f"Every run ran on {c.host}: the environment is the same for every variant.")
        )
    else:
        nd = sum(env.differs)
        blocks.append(
            Para.of(
                f"{len(cols)} environments; {nd} row{'s' if nd != 1 else ''} differ "
                "(highlighted; capture time, free memory and load are not counted)."
                if nd
                else f"{len(cols)} environments, identical apart from capture time, "
                "free memory and load."
            )
        )
    heads = [
        "",
        *[
            c.label + (f" ({', '.join(c.variants)})" if c.variants and len(cols) > 1 else "")
            for c in cols
        ],
    ]
    rows = tuple(
        (Cell(label),) + tuple(Cell(env.value(i, j)) for i in range(len(cols)))
        for j, label in enumerate(env.labels)
    )
    blocks.append(
        Table(
            "",
            tuple(heads),
            rows,
            tuple([False] * len(heads)),
            highlight=env.differs if len(cols) > 1 else (),
            css_class="env",
        )
    )
    return Section("environment", "Environment", tuple(blocks))


def _output_section(r: Report) -> Section:
    blocks: list[Block] = [
        Para.of(
            "The end of each step's output in the last measured run of each variant (",
            Span("perflab show EXP --run N", code=True),
            " prints it whole).",
        )
    ]
    for o in r.runs.outputs:
        where = f"run {o.run}" + (f" of experiment {o.experiment_id}" if r.cross else "")
        title = f"{o.variant} · {o.cell_key} · {where} · {o.name}" + (
            " (last lines)" if o.truncated else ""
        )
        blocks.append(Details(title, (Code(o.text),)))
    return Section("output", "Run output", tuple(blocks))


def _spec_section(r: Report) -> Section:
    blocks: list[Block] = []
    texts: dict[str, list[ExperimentRow]] = {}
    for e in r.experiments:
        if e.spec_text:
            texts.setdefault(e.spec_text, []).append(e)
    for e in r.experiments:
        label = f"experiment {e.id} ({e.name})"
        if e.source == "import":
            src = e.settings.get("imported_from", "a CSV file")
            blocks.append(
                Para.of(
                    f"{label} was imported from ",
                    Span(str(src), code=True),
                    f" ({', '.join(e.settings.get('params', [])) or 'no'} matrix parameters); "
                    "it has no spec.",
                )
            )
        elif not e.spec_text:
            blocks.append(Para.of(f"{label} has no stored spec."))
        elif texts[e.spec_text][0] is e:
            same = [x for x in texts[e.spec_text] if x is not e]
            title = (e.spec_path or "spec") + (f" — {label}" if r.cross else "")
            if same:
                title += (
                    f" (experiment{'s' if len(same) > 1 else ''} {', '.join(str(x.id) for x in same)}: "
                    "the same text)"
                )
            blocks.append(Code(e.spec_text, "toml", title))
    return Section("spec", "The experiment as run", tuple(blocks))


# ----- header facts and reproduction ----------------------------------------------------------


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "–"


def _meta(result: CompareResult, runs: RunData, experiments: list[ExperimentRow]) -> list[str]:
    out = []
    for e in experiments:
        s = e.settings
        hosts = sorted({r.host for r in runs.runs if r.host and r.experiment_id == e.id})
        design = ""
        if "repetitions" in s:
            warm = f" + {s['warmup']} warm-up" if s.get("warmup") else ""
            reps = s["repetitions"]
            runs_per = (
                f"{reps} runs"
                if not isinstance(reps, dict)
                else f"{s.get('adaptive', {}).get('blocks', reps.get('min'))} runs (adaptive {reps.get('min')}…"
                f"{reps.get('max')} until ±{float(reps.get('target_ci', 0)):.2%})"
            )
            design = (
                f", {runs_per}{warm} per cell and variant, "
                f"{s.get('order', 'interleaved')} (seed {s.get('seed')})"
            )
            if s.get("adaptive", {}).get("summary"):
                design += "; " + s["adaptive"]["summary"]
            for name, source in (s.get("overheads") or {}).items():
                design += f"; {name} is net of {describe_overhead(source)} (measured in each run)"
        n_ok = sum(1 for r in runs.runs if r.experiment_id == e.id and not r.warmup)
        out.append(
            f"experiment {e.id} ({e.name}): {e.source}, {_when(e.created_at)}"
            + (f" – {_when(e.finished_at)}" if e.finished_at else "")
            + f", {e.status}{design}; {n_ok} measured runs"
            + (f" on {', '.join(hosts)}" if hosts else "")
        )
    data = result.dataset
    matrix = "; ".join(
        f"{p}: {', '.join(dict.fromkeys(lab.get(p, '') for _, lab in data.cells))}"
        for p in data.params
    )
    out.append(
        "variants: "
        + ", ".join(v + (" (the baseline)" if v == data.baseline else "") for v in data.variants)
        + (f" · matrix: {matrix}" if matrix else "")
        + " · metrics: "
        + ", ".join(
            f"{m.name} ({m.unit}, {m.better} is better)"
            if m.unit
            else f"{m.name} ({m.better} is better)"
            for m in data.metrics
        )
    )
    out.append(
        "statistics: "
        + method_words(result.method, [c.comparison for c in result.comparisons if c.comparison])
        + f", {result.confidence:.0%} confidence"
        + (f", practical threshold ±{result.threshold:.1%}" if result.threshold else "")
    )
    return out


def _scaling_args(fit: ScalingResult | None) -> str:
    if fit is None:
        return ""
    o = fit.options
    out = f" --scaling {shlex.quote(o.param)}"
    if o.exponent is not None:
        out += f" --exponent {o.exponent:g}"
    if o.at is not None:
        out += f" --at {o.at:g}"
    return out + "".join(f" --metric {shlex.quote(m)}" for m in o.metrics)


def _reproduce(
    store: Store,
    result: CompareResult,
    experiments: list[ExperimentRow],
    scaling: ScalingResult | None = None,
) -> list[tuple[str, str]]:
    store_opt = ""
    if store.path.resolve() != default_store_path().resolve():
        store_opt = f" --store {shlex.quote(str(store.path))}"
    opts = ""
    if result.method != "auto":
        opts += f" --method {result.method}"
    if abs(result.confidence - float(experiments[-1].settings.get("confidence", 0.95))) > 1e-12:
        opts += f" --confidence {result.confidence:g}"
    if result.threshold:
        opts += f" --threshold {result.threshold * 100:g}%"
    out = []
    for e in experiments:
        if e.source == "run" and e.spec_path:
            out.append(
                (
                    (
                        f"run experiment {e.id} again (a new experiment; `perflab show {e.id} --spec` "
                        "prints the spec as it was)"
                    ),
                    f"perflab run {shlex.quote(e.spec_path)} --new{store_opt}",
                )
            )
        elif e.source == "import":
            out.append(
                (
                    f"experiment {e.id} was imported from {e.settings.get('imported_from', 'a CSV file')}",
                    f"perflab show {e.id}{store_opt}",
                )
            )
    ids = " ".join(str(e.id) for e in experiments)
    pairs = result.dataset.experiment.settings.get("cross", {}).get("pairs", [])
    if pairs and any(a != b for a, b in pairs):
        opts += "".join(f" --variant {shlex.quote(a if a == b else f'{a}={b}')}" for a, b in pairs)
    out.append(("the comparison, in the terminal", f"perflab compare {ids}{opts}{store_opt}"))
    if scaling is not None:
        same = " ".join(
            f"--{o} {v}" for o, v in re.findall(r"--(confidence|threshold) (\S+)", opts)
        )
        out.append(
            (
                "the scaling fit, in the terminal",
                f"perflab compare {ids}{_scaling_args(scaling)}{' ' + same if same else ''}{store_opt}",
            )
        )
    out.append(
        (
            "this report",
            f"perflab report {ids}{opts}{_scaling_args(scaling)}{store_opt} -o report.html",
        )
    )
    return out
