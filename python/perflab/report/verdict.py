"""The one-paragraph verdict at the top of a report, in words, from the comparisons.

Only words around numbers already computed (`ComparisonTable`); the intervals are
written exactly as the TLDR table writes them (`tldr_text`).
"""

from __future__ import annotations

from perflab.analysis.comparison_table import ComparedCell, ComparisonTable
from perflab.analysis.sweep import SweepRow
from perflab.report.blocks import Para, Span
from perflab.report.numbers import method_words, tldr_text
from perflab.stats import Verdict

#: Most places named per verdict and metric before "and N more".
MAX_PLACES = 4


def cell_name(cell_key: str) -> str:
    """How a sentence names a cell: ``keys=~90%``; the whole experiment for no matrix."""
    return "" if cell_key in ("", "-") else cell_key


def _runs(cs: list[ComparedCell]) -> str:
    ns = sorted(
        {n for c in cs if c.comparison for n in (c.comparison.n_baseline, c.comparison.n_candidate)}
    )
    if not ns:
        return "no runs"
    if len(ns) == 1:
        return f"{ns[0]} run{'s' if ns[0] != 1 else ''} per variant and cell"
    return f"{ns[0]}–{ns[-1]} runs per variant and cell"


def _count(n: int, what: str) -> str:
    return f"{n} {what}"


def verdict_paragraphs(result: ComparisonTable) -> list[Para]:
    """One paragraph per candidate variant (one in the usual two-variant experiment)."""
    data = result.dataset
    out = []
    for cand in result.candidates:
        cs = [c for c in result.comparisons if c.variant == cand]
        counts = {v: sum(1 for c in cs if c.verdict is v) for v in Verdict}
        total = len(cs)
        spans: list[Span] = [
            Span(cand, strong=True),
            Span(" vs "),
            Span(data.baseline, strong=True),
            Span(
                f" ({_runs(cs)}, {result.confidence:.0%} confidence intervals, "
                f"{method_words(result.method, [c.comparison for c in cs if c.comparison])}): "
            ),
        ]
        parts = []
        if counts[Verdict.BETTER]:
            parts.append(
                Span(f"better in {counts[Verdict.BETTER]} of {total} comparisons", Verdict.BETTER)
            )
        if counts[Verdict.WORSE]:
            parts.append(
                Span(
                    f"worse in {counts[Verdict.WORSE]}"
                    + ("" if parts else f" of {total} comparisons"),
                    Verdict.WORSE,
                )
            )
        if counts[Verdict.WITHIN_NOISE]:
            parts.append(
                Span(
                    f"a change within the ±{result.threshold:.1%} noise threshold in "
                    f"{counts[Verdict.WITHIN_NOISE]}"
                )
            )
        if counts[Verdict.NOT_SIGNIFICANT]:
            parts.append(
                Span(
                    f"no significant change in {counts[Verdict.NOT_SIGNIFICANT]}"
                    + ("" if parts else f" of {total} comparisons")
                )
            )
        if counts[Verdict.UNDEFINED]:
            parts.append(
                Span(
                    f"too little data in {counts[Verdict.UNDEFINED]}"
                    + ("" if parts else f" of {total} comparisons")
                )
            )
        for i, p in enumerate(parts):
            if i:
                spans.append(Span(", " if i < len(parts) - 1 else " and "))
            spans.append(p)
        spans.append(Span(". "))
        sweeps = {s.metric.name: s for s in result.sweeps if s.variant == cand}
        for m in data.metrics:
            spans += _metric_sentence(
                result,
                [c for c in cs if c.metric.name == m.name],
                m.name,
                m.better,
                sweeps.get(m.name),
            )
        if result.notes:
            spans.append(
                Span(
                    f"See the {len(result.notes)} warning{'s' if len(result.notes) != 1 else ''} "
                    "below before relying on this."
                )
            )
        out.append(Para(tuple(spans)))
    return out


def _places(cs: list[ComparedCell], with_interval: bool) -> list[Span]:
    spans: list[Span] = []
    shown = cs[:MAX_PLACES]
    for i, c in enumerate(shown):
        if i:
            spans.append(Span(", " if i < len(shown) - 1 or len(cs) > MAX_PLACES else " and "))
        where = cell_name(c.cell_key)
        if with_interval:
            text = tldr_text(c.comparison, c.verdict, c.metric.unit)
            spans.append(Span(text + (f" at {where}" if where else ""), c.verdict))
        else:
            spans.append(Span(where or "overall"))
    if len(cs) > MAX_PLACES:
        spans.append(Span(f" and {len(cs) - MAX_PLACES} more"))
    return spans


def _metric_sentence(
    result: ComparisonTable,
    cs: list[ComparedCell],
    name: str,
    better: str,
    sweep: SweepRow | None = None,
) -> list[Span]:
    spans: list[Span] = [Span(name, code=True), Span(f" ({better} is better): ")]
    groups = [
        (Verdict.BETTER, "better "),
        (Verdict.WORSE, "worse "),
        (Verdict.WITHIN_NOISE, "within noise "),
    ]
    clauses: list[list[Span]] = []
    for verdict, word in groups:
        g = [c for c in cs if c.verdict is verdict]
        if g:
            clauses.append([Span(word)] + _places(g, with_interval=True))
    ns = [c for c in cs if c.verdict is Verdict.NOT_SIGNIFICANT]
    if ns:
        if len(ns) == len(cs):
            clauses.append([Span("no significant change" + (" anywhere" if len(cs) > 1 else ""))])
        else:
            clauses.append([Span("no significant change at ")] + _places(ns, with_interval=False))
    und = [c for c in cs if c.verdict is Verdict.UNDEFINED]
    if und:
        clauses.append([Span("too little data at ")] + _places(und, with_interval=False))
    for i, clause in enumerate(clauses):
        if i:
            spans.append(Span("; "))
        spans += clause
    spans.append(Span(". "))
    if sweep is not None:
        where = sweep.label.replace(" (geometric mean)", "")
        spans += [
            Span(f"Geometric mean over {where}: "),
            Span(tldr_text(sweep.comparison, sweep.verdict, sweep.metric.unit), sweep.verdict),
            Span(". "),
        ]
    return spans
