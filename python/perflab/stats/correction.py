"""Multiple comparisons: adjust a family of comparisons so that the table as a whole is honest.

A matrix of k cells × m metrics × v variants makes many comparisons; at 95% each, one
in twenty "changes" would appear by chance when nothing changed. Corrections:

- ``holm`` (default): family-wise error rate ≤ α — the chance that *any* reported change
  is false. Uniformly more powerful than Bonferroni. Adjusted p-values are Holm's
  step-down ones. Intervals (``holm_intervals``): ``"nominal"`` (perflab's default) keeps
  each change found at the requested level — the decision is Holm's, the interval says
  how large the change is, per comparison — keeps comparisons with p > α there too (their
  intervals contain zero already), and widens only the demoted ones (significant alone, not
  after Holm) to 1 − α/(m−r) (r rejections), where they contain zero; ``"stepped"`` recomputes every interval at
  the level of its step, 1 − α/(m−j+1) for the j-th smallest p-value among the rejected,
  so that an interval excludes zero exactly when Holm rejects.
- ``bonferroni``: the same guarantee, and all intervals at 1 − α/m hold *simultaneously*.
- ``bh`` (Benjamini–Hochberg): false discovery rate ≤ α — on average at most a fraction
  α of the reported changes are false; more power when many things changed. Its
  intervals follow Benjamini & Yekutieli (2005): the R selected comparisons get
  false-coverage-rate adjusted intervals at level 1 − R·α/m (on average at most α of
  the selected intervals miss); the others are shown at 1 − (R+1)·α/m, where they
  contain zero (consistent with "not selected") but carry no FCR guarantee.
- ``none``: each comparison on its own at the requested level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.stats import special
from perflab.stats.arrays import FloatArray
from perflab.stats.intervals import ABOVE_MINUS_ONE, check_confidence
from perflab.stats.options import CORRECTIONS, DEFAULT_CORRECTION
from perflab.stats.records import made
from perflab.stats.types import Comparison, replace_comparison
from perflab.stats.warnings import StatWarning

if TYPE_CHECKING:  # (methods imports every method; at run time only compare_family needs one)
    from perflab.stats.methods import Method

HOLM_INTERVALS = ("stepped", "nominal")


def adjust_p_values(
    p_values: Sequence[float] | FloatArray, correction: str = DEFAULT_CORRECTION
) -> FloatArray:
    """Adjusted p-values (same order); NaN entries stay NaN and do not count in the family."""
    if correction not in CORRECTIONS:
        raise ValueError(
            f"unknown correction {correction!r} (choose from {', '.join(CORRECTIONS)})"
        )
    p = np.array(p_values, dtype=np.float64, copy=True)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    out = p.copy()
    if m == 0 or correction == "none":
        return out
    q = p[ok]
    if correction == "bonferroni":
        out[ok] = np.minimum(1.0, m * q)
    elif correction == "holm":
        order = np.argsort(q, kind="stable")
        stepped = np.minimum(1.0, (m - np.arange(m)) * q[order])
        adj = np.empty(m)
        adj[order] = np.maximum.accumulate(stepped)
        out[ok] = adj
    else:
        from scipy import stats as sps  # on use: scipy.stats costs ~0.3 s to import

        out[ok] = sps.false_discovery_control(q, method="bh")
    return out


def interval_levels(
    p_values: Sequence[float] | FloatArray,
    correction: str,
    confidence: float,
    holm_intervals: str = "stepped",
) -> FloatArray:
    """Confidence level of each comparison's interval under ``correction`` (NaN where p is NaN)."""
    if holm_intervals not in HOLM_INTERVALS:
        raise ValueError(
            f"holm_intervals must be one of {', '.join(HOLM_INTERVALS)}, not {holm_intervals!r}"
        )
    confidence = check_confidence(confidence)
    alpha = 1 - confidence
    p = np.asarray(p_values, dtype=np.float64)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    levels = np.full(p.shape, np.nan)
    if m == 0:
        return levels
    q = p[ok]
    if correction == "none":
        lv = np.full(m, confidence)
    elif correction == "bonferroni":
        lv = np.full(m, 1 - alpha / m)
    elif correction == "holm":
        order = np.argsort(q, kind="stable")
        steps = alpha / (m - np.arange(m))  # thresholds of steps 1…m
        passed = q[order] <= steps
        r = m if passed.all() else int(np.argmin(passed))  # rejections before the first failure
        rest = 1 - alpha / (m - r) if r < m else math.nan  # unused when all are rejected
        if holm_intervals == "nominal":
            # Only the demoted (significant alone, not after Holm) need widening: an interval
            # with p > α already contains zero at the requested level.
            lv_sorted = np.where((np.arange(m) < r) | (q[order] > alpha), confidence, rest)
        else:
            lv_sorted = np.where(np.arange(m) < r, 1 - steps, rest)
        lv = np.empty(m)
        lv[order] = lv_sorted
    elif correction == "bh":
        selected = adjust_p_values(q, "bh") <= alpha
        r = int(selected.sum())
        lv = np.where(selected, 1 - r * alpha / m, 1 - min(r + 1, m) * alpha / m)
    else:
        raise ValueError(
            f"unknown correction {correction!r} (choose from {', '.join(CORRECTIONS)})"
        )
    levels[ok] = lv
    return levels


@dataclass(frozen=True)
class FamilyResult:
    """A family of comparisons after a multiple-comparison correction.

    comparisons: adjusted, in input order — p_value is the adjusted p-value, [low, high]
                 the interval at ``levels[i]`` (so ``significant`` is the corrected decision).
    raw:         the same comparisons before correction (at ``confidence``).
    levels:      confidence level of each adjusted interval, in (0, 1); NaN if undefined.
    size:        number of comparisons with a defined p-value (the family counted).
    statement:   one sentence saying what was controlled, to print under the table.
    """

    correction: str
    confidence: float
    size: int
    comparisons: tuple[Comparison, ...]
    raw: tuple[Comparison, ...]
    levels: tuple[float, ...]
    statement: str

    @property
    def discoveries(self) -> int:
        return sum(1 for c in self.comparisons if c.significant)

    def to_dict(self) -> dict[str, Any]:
        return {
            "correction": self.correction,
            "confidence": self.confidence,
            "size": self.size,
            "discoveries": self.discoveries,
            "statement": self.statement,
            "levels": list(self.levels),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "raw": [c.to_dict() for c in self.raw],
        }


def _statement(
    correction: str,
    confidence: float,
    size: int,
    levels: FloatArray,
    comps: Sequence[Comparison],
    holm_intervals: str = "stepped",
) -> str:
    alpha = 1 - confidence
    a = f"{alpha:.0%}" if round(alpha * 100, 6).is_integer() else f"{alpha:.1%}"
    if size == 0:
        return "No comparison could be tested: nothing to correct."
    n_word = f"{size} comparison{'s' if size != 1 else ''}"
    if correction == "none":
        return (
            f"No multiple-comparison correction: each of the {n_word} is at {confidence:.0%} on "
            f"its own; if nothing changed, about {alpha * size:.1f} would still show a change."
        )
    defined = levels[~np.isnan(levels)]
    if correction == "bonferroni":
        return (
            f"Bonferroni over {n_word}: the chance of any false change is ≤ {a}; all intervals "
            f"at {defined.min():.2%} hold simultaneously."
        )
    if correction == "holm" and holm_intervals == "nominal":
        r = sum(1 for c in comps if c.significant)
        found = (
            f"the {r} change{'s' if r != 1 else ''} found {'are' if r != 1 else 'is'} shown at "
            f"{confidence:.0%} each"
            if r
            else "no change was found"
        )
        demoted = int(np.sum(~np.isnan(levels) & (levels > confidence + 1e-12)))
        rest = (
            (
                f"; {demoted} change{'s' if demoted != 1 else ''} significant on {'their' if demoted != 1 else 'its'} "
                f"own {'are' if demoted != 1 else 'is'} NS after correction (interval widened to "
                f"{1 - alpha / (size - r):.2%})"
            )
            if demoted
            else ""
        )
        return f"Holm over {n_word}: the chance of any false change is ≤ {a} (family-wise); {found}{rest}."
    if correction == "holm":
        least, most = defined.min(), defined.max()
        span = f"{least:.2%}" if math.isclose(least, most) else f"{least:.2%}–{most:.2%}"
        return (
            f"Holm over {n_word}: the chance of any false change is ≤ {a} (family-wise); "
            f"intervals at {span}, widened by step."
        )
    r = sum(1 for c in comps if c.significant)
    if r:
        sel = (
            f"the {r} change{'s' if r != 1 else ''}' intervals are FCR-adjusted "
            f"(Benjamini–Yekutieli) at {1 - r * alpha / size:.2%}"
        )
    else:
        sel = "no change was found"
    return (
        f"Benjamini–Hochberg over {n_word}: on average ≤ {a} of the reported changes are "
        f"false (false discovery rate); {sel}."
    )


def correct(
    comparisons: Sequence[Comparison],
    correction: str = DEFAULT_CORRECTION,
    recompute: Callable[[int, float], Comparison] | None = None,
    holm_intervals: str = "stepped",
    recompute_many: Callable[[list[int], list[float]], list[Comparison]] | None = None,
) -> FamilyResult:
    """Apply ``correction`` to a family of comparisons made at one confidence level.

    recompute(i, level) must return comparison i recomputed at ``level`` (same data,
    same method); it widens the intervals. Without it, intervals are widened
    approximately (`widen`), in a way that still agrees with the adjusted p-value; pass
    ``recompute`` (or use `compare_family`) for exact intervals.

    Every returned comparison obeys the agreement rule with the family's α = 1 −
    confidence: significant ⇔ its interval excludes 0 ⇔ its adjusted ``p_value`` ≤ α.
    ``p_raw`` keeps the unadjusted p-value and ``correction`` names the correction.
    recompute_many(indices, levels): the same as ``recompute`` for many at once (preferred).
    """
    if correction not in CORRECTIONS:
        raise ValueError(
            f"unknown correction {correction!r} (choose from {', '.join(CORRECTIONS)})"
        )
    comps = tuple(comparisons)
    if not comps:
        return FamilyResult(
            correction, 0.95, 0, (), (), (), _statement(correction, 0.95, 0, np.array([]), ())
        )
    confidence = comps[0].confidence
    if any(not math.isclose(c.confidence, confidence) for c in comps):
        raise ValueError("all comparisons of a family must share one confidence level")
    p = np.array([c.p_value for c in comps])
    p_adj = adjust_p_values(p, correction)
    levels = interval_levels(p, correction, confidence, holm_intervals)
    if recompute_many is not None:
        recompute = _batched(recompute_many, levels, confidence, recompute)
    alpha = 1 - confidence
    out = []
    for i, (c, level, pa) in enumerate(zip(comps, levels.tolist(), p_adj.tolist())):
        # (the common case made directly: a table of thousands keeps most levels unchanged)
        if level == confidence and _agrees(c, pa, alpha):
            out.append(_at_level(c, level, pa, correction))
        else:
            out.append(_corrected(c, i, level, pa, confidence, correction, recompute))
    size = int((~np.isnan(p)).sum())
    return FamilyResult(
        correction=correction,
        confidence=confidence,
        size=size,
        comparisons=tuple(out),
        raw=comps,
        levels=tuple(float(x) for x in levels),
        statement=_statement(correction, confidence, size, levels, out, holm_intervals),
    )


def _batched(
    recompute_many: Callable[[list[int], list[float]], list[Comparison]],
    levels: FloatArray,
    confidence: float,
    recompute: Callable[[int, float], Comparison] | None,
) -> Callable[[int, float], Comparison] | None:
    """``recompute`` answered from one ``recompute_many`` call over every comparison whose
    level changes (``recompute`` itself when none does)."""
    redo = [
        i
        for i, level in enumerate(levels.tolist())
        if level == level and not math.isclose(level, confidence)  # (level == level: not NaN)
    ]
    if not redo:
        return recompute
    batch = dict(zip(redo, recompute_many(redo, [float(levels[i]) for i in redo])))
    return lambda i, lv: batch[i]  # the batch's answers, by index


def _agrees(c: Comparison, p_adj: float, alpha: float) -> bool:
    """``c``'s interval and the adjusted p-value tell the same (the agreement rule), or
    ``c`` has no interval."""
    return not c.defined or c.significant == (p_adj <= alpha)


def _at_level(c: Comparison, level: float, p_adj: float, correction: str) -> Comparison:
    """``c`` with its adjusted p-value, its raw one kept, at its own level: `_corrected`'s
    result where the level does not change and the interval agrees with ``p_adj``."""
    fields = dict(c.__dict__)
    fields["p_raw"] = c.p_value
    fields["p_value"] = p_adj
    fields["confidence"] = level
    fields["correction"] = correction
    return made(Comparison, fields)


def _corrected(
    c: Comparison,
    i: int,
    level: float,
    p_adj: float,
    confidence: float,
    correction: str,
    recompute: Callable[[int, float], Comparison] | None,
) -> Comparison:
    """Comparison ``i`` at its corrected ``level`` (NaN: untested, kept as it is) with its
    adjusted p-value: unchanged at the family's ``confidence``, else recomputed or widened."""
    if math.isnan(level):
        return _replace(c, p_raw=c.p_value, correction=correction)
    if math.isclose(level, confidence):
        new = c
    elif recompute is not None:
        new = recompute(i, level)
    else:
        new = widen(c, level)
    new = _replace(new, p_value=p_adj, p_raw=c.p_value, confidence=level, correction=correction)
    if new.defined and new.significant != (new.p_value <= 1 - confidence):
        # Cannot happen for perflab's methods (their p-values invert their intervals at
        # every level); kept so that a table never contradicts itself.
        new = _replace(
            widen(c, level),
            p_value=p_adj,
            p_raw=c.p_value,
            confidence=level,
            correction=correction,
            warnings=new.warnings
            + (
                StatWarning(
                    "interval_approximated",
                    "the interval recomputed at the corrected level disagreed with the "
                    "adjusted p-value; an approximation that agrees with it is shown",
                    {"level": level},
                ),
            ),
        )
    return new


def widen(c: Comparison, level: float) -> Comparison:
    """``c`` (at ``c.confidence``) widened to ``level`` ≥ c.confidence without its data.

    The side away from 0 scales with the ratio of normal quantiles. The side towards 0 is
    interpolated in the normal quantile between two points known exactly: its distance
    at c.confidence and the level 1 − p at which the test puts it at 0 — so the widened
    interval excludes 0 exactly when p < 1 − level, the rule every correction's levels are
    built on. Ratios are widened on the log scale (never below −100%).
    """
    if not c.defined or level <= c.confidence:
        return c
    log = c.scale == "ratio"
    g = (math.log1p) if log else (lambda x: x)
    g_inv = (math.expm1) if log else (lambda x: x)
    est, lo, hi = g(c.estimate), g(c.low), g(c.high)
    z_c = float(special.ndtri(0.5 + c.confidence / 2))
    z_l = float(special.ndtri(0.5 + level / 2))
    f = z_l / z_c
    new_lo, new_hi = est - f * (est - lo), est + f * (hi - est)
    if c.significant and 0 < c.p_value < 1 - c.confidence:
        z_p = float(special.ndtri(1 - c.p_value / 2))
        if est > 0:  # near side is the low one
            d_c, d_p = est - lo, est
            d = d_c + (d_p - d_c) * (z_l - z_c) / (z_p - z_c)
            new_lo = est - d
        else:
            d_c, d_p = hi - est, -est
            d = d_c + (d_p - d_c) * (z_l - z_c) / (z_p - z_c)
            new_hi = est + d
    elif c.significant and c.p_value == 0:  # known exactly: stays off 0 at every level
        new_lo = lo if est > 0 else new_lo
        new_hi = hi if est < 0 else new_hi
    low = g_inv(new_lo)
    if log:  # a ratio of positive runs: never −100% (expm1 of a very negative log rounds to −1)
        low = max(low, ABOVE_MINUS_ONE)
    return _replace(c, low=low, high=g_inv(new_hi), confidence=level)


def _replace(c: Comparison, **changes: Any) -> Comparison:
    return replace_comparison(c, **changes)


def compare_family(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    method: Method | None = None,
    confidence: float = 0.95,
    correction: str = DEFAULT_CORRECTION,
) -> FamilyResult:
    """Compare every (baseline, candidate) pair with ``method`` (default: `Auto`, the
    registry's default) and correct.

    The family is everything the report shows together (all cells × metrics × variants).
    """
    if method is None:
        from perflab.stats.auto import Auto

        method = Auto()
    pairs = list(pairs)
    raw = [method.compare(a, b, confidence) for a, b in pairs]
    return correct(raw, correction, lambda i, lv: method.compare(pairs[i][0], pairs[i][1], lv))
