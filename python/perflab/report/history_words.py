"""Words and numbers of a history (`perflab history`), shared by its terminal, Markdown and
HTML views: a change point as a sentence ("between v1.4 and v1.5: −7.9% [−9.1, −6.6]
worse (p = 0.001)"), a version's point as "12.31 [12.10, 12.52]" in a readable unit, and
the series grouped by cell and variant (one table each)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.analysis.version_series import Change, History, Series
from perflab.report.blocks import Cell, Table
from perflab.report.numbers import fmt_estimate, fmt_sig, readable_unit
from perflab.stats import Verdict

MINUS = "\u2212"
#: Characters of a commit id shown in a table.
SHORT_COMMIT = 10


@dataclass(frozen=True)
class Group:
    """The series of one cell and one variant: a table's columns (one per metric)."""

    cell_key: str
    labels: dict[str, str]
    variant: str
    series: tuple[Series, ...]

    def title(self, params: tuple[str, ...]) -> str:
        """``variant fast`` · ``keys=1000``."""
        where = ", ".join(f"{p}={self.labels[p]}" for p in params if p in self.labels)
        if not where and self.cell_key != "-":
            where = self.cell_key
        return f"variant {self.variant}" + (f" at {where}" if where else "")


def groups(history: History) -> list[Group]:
    """The series by (cell, variant), in the order the series come."""
    out: dict[tuple[str, str], list[Series]] = {}
    for s in history.series:
        out.setdefault((s.cell_key, s.variant), []).append(s)
    return [Group(k[0], v[0].labels, k[1], tuple(v)) for k, v in out.items()]


def unit_of(series: Series) -> tuple[str, float]:
    """(unit to print, factor for the values) so that the series' typical mean reads
    between 1 and 1000 (`readable_unit`)."""
    means = sorted(abs(p.mean) for p in series.points if p is not None)
    return readable_unit(series.metric.unit, means[len(means) // 2] if means else math.nan)


def header(series: Series, unit: str) -> str:
    """``wall_time (ms) ↓``."""
    arrow = "↑" if series.metric.better == "higher" else "↓"
    return f"{series.metric.name}{f' ({unit})' if unit else ''} {arrow}"


def point_text(series: Series, index: int, factor: float) -> str:
    """Version ``index``'s mean and interval (``12.31 [12.10, 12.52]``), "–" without runs."""
    p = series.points[index]
    if p is None:
        return "–"
    return fmt_estimate(p.mean, p.ci_low, p.ci_high, factor)


def changes_at(series: Series) -> dict[str, Change]:
    """The change points by the label of the first version at the new level."""
    return {c.after: c for c in series.found}


def _signed(x: float, decimals: int) -> str:
    text = f"{abs(x):.{decimals}f}"
    return (MINUS if x < 0 and float(text) != 0 else "+") + text


def change_size(change: Change, unit: str = "") -> str:
    """The change and its interval: ``−7.9% [−9.1, −6.6]``, or in the metric's unit when
    the values straddle zero (``+1.2 ms [+0.8, +1.6]``)."""
    c = change.point.comparison
    if c.scale == "absolute":
        u = f" {unit}" if unit else ""
        return f"{_plus(c.estimate)}{u} [{_plus(c.low)}, {_plus(c.high)}]"
    lo, est, hi = c.low * 100, c.estimate * 100, c.high * 100
    decimals = 1
    while decimals < 4 and round(lo, decimals) == round(hi, decimals) and lo != hi:
        decimals += 1
    return f"{_signed(est, decimals)}% [{_signed(lo, decimals)}, {_signed(hi, decimals)}]"


def _plus(x: float) -> str:
    text = fmt_sig(abs(x))
    return (MINUS if x < 0 else "+") + text


def p_text(p: float) -> str:
    """A p-value for a sentence: ``p = 0.001``, ``p = 0.03``, ``p < 0.0001``."""
    if p < 1e-4:
        return "p < 0.0001"
    return f"p = {p:.2g}" if p >= 0.01 else f"p = {p:.1g}"


def change_sentence(change: Change, unit: str = "") -> str:
    """``between v1.4 and v1.5: −7.9% [−9.1, −6.6] worse (p = 0.001)``: the change (its
    interval at the change points' level) and the search's evidence."""
    word = {Verdict.BETTER: " better", Verdict.WORSE: " worse"}.get(change.point.verdict, "")
    return (
        f"between {change.before} and {change.after}: {change_size(change, unit)}{word} "
        f"({p_text(change.point.p_detection)})"
    )


def no_change_sentence(history: History) -> str:
    return f"no change point ({history.change_confidence:.0%}, beyond ±{history.min_effect:.1%})"


def method_line(history: History) -> str:
    """How the numbers were made, in one line."""
    return (
        f"each version: the mean of its runs [{history.confidence:.0%} t interval]; change "
        "points: a rank scan over every run with a permutation test (p), each change by "
        f"Mann–Whitney / Hodges–Lehmann [{history.change_confidence:.0%} interval], "
        f"reported beyond ±{history.min_effect:.1%}"
    )


def experiments_text(history: History) -> str:
    """``8 versions, experiments #1–#8`` (ids listed when not a run of numbers)."""
    ids = sorted(i for v in history.versions for i in v.experiments)
    n = len(history.versions)
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        shown = f"#{ids[0]}–#{ids[-1]}"
    else:
        shown = ", ".join(f"#{i}" for i in ids[:12]) + (", …" if len(ids) > 12 else "")
    return f"{n} version{'s' if n != 1 else ''}, experiment{'s' if len(ids) != 1 else ''} {shown}"


def history_table(history: History, group: Group) -> Table:
    """A row per version: version, commit (when any is known), runs, each metric's mean
    [interval]; the first version at a new level carries the change's verdict."""
    commits = any(v.commit for v in history.versions)
    columns = ["version", *(["commit"] if commits else []), "runs"]
    numeric = [False, *([False] if commits else []), True]
    scaled = [(s, *unit_of(s)) for s in group.series]
    columns += [header(s, unit) for s, unit, _ in scaled]
    numeric += [True] * len(scaled)
    rows = []
    for i, v in enumerate(history.versions):
        counts = [p.n for s in group.series if (p := s.points[i]) is not None]
        if not counts:
            continue
        row = [Cell(v.label), *([Cell((v.commit or "")[:SHORT_COMMIT])] if commits else [])]
        row.append(Cell(str(max(counts))))
        for s, _unit, factor in scaled:
            change = changes_at(s).get(v.label)
            verdict = change.point.verdict if change is not None else None
            row.append(Cell(point_text(s, i, factor), verdict))
        rows.append(tuple(row))
    title = f"{group.title(history.params)}: mean [{history.confidence:.0%} CI] per version"
    return Table(title, tuple(columns), tuple(rows), tuple(numeric))
