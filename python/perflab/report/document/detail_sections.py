"""The report's sections of text and tables after the verdict and the plots: the variants
table (part of the verdict), the scaling fit, the load processes of loads run from several
machines, warnings and failed runs, the environment, run output and the experiment's
spec."""

from __future__ import annotations

from perflab.records import ExperimentRow
from perflab.report.blocks import Block, Bullets, Cell, Code, Details, Para, Section, Span, Table
from perflab.report.document.model import Report
from perflab.report.palette import COLOR_NAMES
from perflab.report.scaling_table import method_line, model_text, per_what, scaling_tables
from perflab.report.tables import note_lines


def variants_table(r: Report) -> Table:
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


def scaling_fit_section(r: Report) -> Section:
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


def warnings_section(r: Report) -> Section:
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


def environment_section(r: Report) -> Section:
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


def load_processes_section(r: Report) -> Section:
    """Each load process of a kv phase run from several hosts, per cell and variant."""
    rows = tuple(
        (
            Cell(p.phase),
            Cell(p.cell),
            Cell(p.variant, color=r.colors.get(p.variant)),
            Cell(p.process),
            Cell(str(p.runs)),
            Cell(f"{p.ops_per_sec:,.0f}"),
            Cell(f"{p.p99_latency_ms:.3f}"),
            Cell(f"{100 * p.share:.1f}%"),
        )
        for p in sorted(
            r.runs.load_processes, key=lambda p: (p.phase, p.cell, p.variant, p.process)
        )
    )
    table = Table(
        "Load processes (medians over the measured runs)",
        ("phase", "cell", "variant", "process", "runs", "ops/s", "p99 (ms)", "share"),
        rows,
        (False, False, False, False, True, True, True, True),
        css_class="load-processes",
    )
    return Section(
        "load-processes",
        "Load processes",
        (
            Para.of(
                "Phases whose load came from several processes (",
                Span("on = [hosts]", code=True),
                "): each process's own throughput and p99, and its share of the merged "
                "throughput. The results above are the merged ones: requests summed, "
                "latency percentiles from the pooled histograms. A process far below its "
                "share, or far slower, points at its host or its path to the server.",
            ),
            table,
        ),
    )


def output_section(r: Report) -> Section:
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


def spec_section(r: Report) -> Section:
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
