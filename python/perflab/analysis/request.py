"""A question about stored experiments, as asked: a `ComparisonRequest` — what to compare
(one experiment's variants with its baseline, experiment B against experiment A, every cell
against a reference cell, or cost against a numeric parameter) and how (`CompareOptions`,
declared once as `CompareKwargs` for keyword callers) — with the parsing of the text forms
the command line and the Python API take (``--across PARAM=VALUE``, ``--variant A=B``,
``--threshold 1%``). `perflab.analysis.answer` answers it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from perflab.errors import InputError
from perflab.stats.options import MANNWHITNEY_SCALES, WELCH_INTERVALS

if TYPE_CHECKING:
    from perflab.analysis.scaling import ScalingOptions


#: A method's own option names that method (`--interval fieller` alone means Welch).
OPTION_OWNER = {
    "interval": "welch",
    "statistic": "bootstrap",
    "resamples": "bootstrap",
    "scale": "mannwhitney",
}


@dataclass(frozen=True)
class CompareOptions:
    """How to compare: `perflab compare`'s statistics options, checked."""

    method: str = "auto"
    method_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    confidence: float | None = None
    threshold: float = 0.0  # fraction
    correction: str = "holm"
    diagnostics: bool | None = None

    def analysis_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `compare_dataset` / `compare_cross`."""
        return {
            "method": self.method,
            "method_options": dict(self.method_options),
            "confidence": self.confidence,
            "threshold": self.threshold,
            "correction": self.correction,
            "diagnostics": self.diagnostics,
        }


class CompareKwargs(TypedDict, total=False):
    """`perflab compare`'s statistics options as keyword arguments, declared once: what
    `compare_options` and `perflab.api.lab.Store.compare` take (defaults: `compare_options`)."""

    method: str  # auto, welch, bootstrap, mannwhitney, paired
    confidence: float | None  # default: the experiment's, 0.95
    threshold: float | str  # a fraction (0.01) or a percentage as text ("1%")
    correction: str  # holm, bonferroni, bh, none
    interval: str | None  # Welch's: auto, difference, fieller
    statistic: str | None  # the bootstrap's
    resamples: int | None  # the bootstrap's
    scale: str | None  # Mann-Whitney's: auto, ratio, shift
    diagnostics: bool | None  # per-cell diagnostics (default: on for small tables)


def compare_options(**given: Unpack[CompareKwargs]) -> CompareOptions:
    """The options checked as the command checks them (InputError, one line, otherwise)."""
    method = given.get("method", "auto")
    confidence = given.get("confidence")
    interval, statistic = given.get("interval"), given.get("statistic")
    resamples, scale = given.get("resamples"), given.get("scale")
    if confidence is not None and not (
        isinstance(confidence, (int, float)) and 0.5 < confidence < 1
    ):
        raise InputError(f"confidence must be between 0.5 and 1, e.g. 0.95 (got {confidence!r})")
    if interval is not None and interval not in WELCH_INTERVALS:
        raise InputError(f"interval {interval!r}: choose from {', '.join(WELCH_INTERVALS)}")
    if scale is not None and scale not in MANNWHITNEY_SCALES:
        raise InputError(f"scale {scale!r}: choose from {', '.join(MANNWHITNEY_SCALES)}")
    from perflab.stats.bootstrap import MIN_RESAMPLES

    if resamples is not None and (
        isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < MIN_RESAMPLES
    ):
        raise InputError(f"resamples must be a whole number ≥ {MIN_RESAMPLES} (got {resamples!r})")
    method_options = {
        k: v
        for k, v in (
            ("interval", interval),
            ("statistic", statistic),
            ("resamples", resamples),
            ("scale", scale),
        )
        if v is not None
    }
    if method == "auto" and method_options:
        method = OPTION_OWNER[next(iter(method_options))]
    return CompareOptions(
        method,
        method_options,
        confidence,
        _threshold(given.get("threshold", 0.0)),
        given.get("correction", "holm"),
        given.get("diagnostics"),
    )


def _threshold(value: float | str) -> float:
    """A fraction ≥ 0 from ``0.01`` or ``"1%"``."""
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
        try:
            x = float(text.removesuffix("%")) / 100
        except ValueError:
            raise InputError(f"threshold {value!r}: not a percentage (e.g. '1%')") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
        if x >= 1:
            raise InputError(
                f"threshold {value!r}: a fraction below 1 (0.01 = 1%), or a percentage as text ('1%')"
            )
    else:
        raise InputError(f"threshold {value!r}: a fraction (0.01) or a percentage ('1%')")
    if not (math.isfinite(x) and x >= 0):
        raise InputError(f"threshold {value!r}: must be ≥ 0")
    return x


@dataclass(frozen=True)
class ComparisonRequest:
    """What to compare and how.

    - ``experiment``: an id, a name (its latest experiment) or ``last``;
    - ``other``: compare experiment ``other`` against ``experiment`` as the baseline, cell
      by cell; ``variants`` then pairs variants (``"name"`` or ``("name_a", "name_b")``);
      without ``other``, ``variants`` keeps only these candidates;
    - ``across``: (PARAM, VALUE): every cell against the cell where PARAM=VALUE, within
      each variant, instead of each variant against the baseline;
    - ``scaling``: fit cost = a + b·PARAM^k per variant; ``table`` False: the fits only
      (``perflab compare --scaling``), True: the comparison and the fits (the report);
    - ``metrics``: only these metrics (the correction's family is then theirs);
    - ``movers``: the profiles' top movers (one experiment, not across).
    """

    experiment: str | int
    other: str | int | None = None
    variants: tuple[str | tuple[str, str], ...] = ()
    across: tuple[str, str] | None = None
    scaling: ScalingOptions | None = None
    table: bool = True
    metrics: tuple[str, ...] = ()
    options: CompareOptions = field(default_factory=CompareOptions)
    movers: bool = False

    def __post_init__(self) -> None:
        if self.across is not None and self.other is not None:
            raise InputError(
                f"--across compares the cells of one experiment with each other: drop the "
                f"second experiment ({self.other}), or compare the two experiments without "
                "--across"
            )
        if self.across is not None and self.scaling is not None:
            raise InputError(
                "--across and --scaling answer different questions: use one (--across "
                "PARAM=VALUE compares cells with a reference cell; --scaling PARAM fits cost "
                "against PARAM)"
            )


def parse_across(text: str) -> tuple[str, str]:
    """``PARAM=VALUE`` (``--across``) as (PARAM, VALUE); InputError (one line) otherwise."""
    param, sep, value = text.partition("=")
    param, value = param.strip(), value.strip()
    if not sep or not param or not value:
        raise InputError(
            f"--across {text!r}: write PARAM=VALUE, the matrix cell to compare every other "
            "cell with (e.g. --across instances=1)"
        )
    return param, value


def parse_variant_pairs(texts: Sequence[str] | None) -> list[tuple[str, str]] | None:
    """``NAME`` or ``NAME=NAME_B`` each (``--variant`` with B), checked; None: every variant."""
    if not texts:
        return None
    out = []
    for s in texts:
        left, sep, right = s.partition("=")
        left, right = left.strip(), (right.strip() if sep else left.strip())
        if not left or not right:
            raise InputError(
                f"--variant {s!r}: write NAME, or A_NAME=B_NAME to pair differently named variants"
            )
        out.append((left, right))
    return out


def scaling_options(
    param: str, exponent: float | None, at: str | None, metrics: Sequence[str]
) -> ScalingOptions:
    """A scaling fit over ``param`` (``--scaling``): cost = a + b·param^k, k fitted unless
    ``exponent``; ``at``: the size per-unit costs are compared at (``1000``, ``1e6``, ``10M``)."""
    from perflab.analysis.dataset import parse_number
    from perflab.analysis.scaling import ScalingOptions

    size = None
    if at is not None:
        size = parse_number(at)
        if size is None or size <= 0:
            raise InputError(f"--at {at!r}: expected a positive size such as 1000, 1e6 or 10M")
    return ScalingOptions(param, exponent, size, tuple(metrics))


def ask(
    experiment: str | int,
    other: str | int | None = None,
    *,
    variants: Sequence[str | tuple[str, str]] = (),
    across: str | tuple[str, str] | None = None,
    scaling: str | None = None,
    exponent: float | None = None,
    at: str | float | None = None,
    metrics: Sequence[str] = (),
    table: bool = True,
    movers: bool = False,
    flags: bool = False,
    **statistics: Unpack[CompareKwargs],
) -> ComparisonRequest:
    """The question as either door takes it — texts as typed (``across="PARAM=VALUE"``,
    ``variants=["A=B"]`` with ``other``, ``threshold="1%"``, ``at="10M"``) or already
    parsed — checked once (InputError, one line). ``flags``: an error names a statistics
    option as the command line spells it (``--confidence``)."""
    try:
        options = compare_options(**statistics)
    except InputError as e:
        if not flags:
            raise
        raise InputError(f"--{e.message}", hint=e.hint) from None
    kept: list[str | tuple[str, str]] = list(variants)
    if other is not None:
        texts = [v for v in kept if isinstance(v, str)]
        kept = [*(parse_variant_pairs(texts) or ()), *(v for v in kept if not isinstance(v, str))]
    fit = None
    if scaling is not None:
        fit = scaling_options(scaling, exponent, None if at is None else str(at), metrics)
    return ComparisonRequest(
        experiment,
        other,
        variants=tuple(kept),
        across=parse_across(across) if isinstance(across, str) else across,
        scaling=fit,
        table=table,
        metrics=tuple(metrics),
        options=options,
        movers=movers,
    )
