"""Rules for the plan as a whole: its size within `limits`, adaptive repetitions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.spec import limits
from perflab.spec.name_rules import choices_hint

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec


def check_size(spec: Spec) -> None:
    """The matrix and the plan stay within `limits` (before anything expands them)."""
    m = spec.model
    cells = 1
    for values in m.matrix.values():
        cells *= len(values)
    if cells > limits.MAX_CELLS:
        counts = " × ".join(str(len(v)) for v in m.matrix.values())
        raise spec.error(
            ("matrix",),
            f"the matrix has {counts} = {cells:,} cells; the limit is {limits.MAX_CELLS:,}",
            hint="split the experiment, or drop values",
        )
    reps = m.adaptive.max if m.adaptive else m.initial_repetitions
    runs = cells * len(m.variant) * (m.warmup + reps)
    if runs > limits.MAX_RUNS:
        raise spec.error(
            ("repetitions",),
            f"the plan has {runs:,} runs: {cells:,} cells × {len(m.variant):,} "
            f"variants × ({m.warmup} warm-up + {reps:,}{' (adaptive max)' if m.adaptive else ''} "
            f"runs); the limit is {limits.MAX_RUNS:,}",
            hint="fewer repetitions, variants or cells",
        )


def check_adaptive(spec: Spec) -> None:
    m = spec.model
    a = m.adaptive
    if a is None:
        return
    if a.min > a.max:
        raise spec.error(
            ("repetitions", "max"), f"repetitions: max ({a.max}) is below min ({a.min})"
        )
    if m.order != "interleaved":
        raise spec.error(
            ("order",),
            'adaptive repetitions add whole blocks, so they need order = "interleaved"',
            hint="remove order, or give repetitions as a number",
        )
    known = [x.name for x in m.metric]
    for name in a.metrics:
        if name not in known:
            raise spec.error(
                ("repetitions", "metrics"),
                f"repetitions.metrics names unknown metric '{name}'",
                hint=choices_hint(name, known),
            )
