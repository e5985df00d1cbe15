"""When failing runs stop an experiment early (the spec's ``max_failures`` and
``max_failure_share``; ``on_failure = "abort"`` stops at the first failure before this).

A broken command fails every run the same way; running all of them only wastes the
machine and ends in a table of ``n/a``. Two rules, checked after every finished run:

* **the same failure N times in a row** — N consecutive runs of the experiment, or the
  first N runs of one variant (a broken variant in an interleaved design never fails N
  times in a row overall), failed the same way: same step, same kind of failure (exit
  status, signal or timeout). ``max_failures = 0`` turns this off.
* **too large a share** — once ``MIN_RUNS_FOR_SHARE`` runs have finished, more than
  ``max_failure_share`` of them failed (whatever the way): the survivors are too few, or
  too selected, to compare. ``"100%"`` turns this off.

The policy sees the runs this invocation executes (a resumed experiment starts afresh).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Runs that must have finished before the share rule can stop an experiment.
MIN_RUNS_FOR_SHARE = 10


@dataclass(frozen=True)
class Failure:
    """How a run failed. ``signature`` is what "the same way" compares: the step and the
    kind of failure, not the stderr text (which varies with PIDs, times, addresses)."""

    step: str
    kind: str  # "exited with status 3", "killed by SIGSEGV", "timed out", "failed"
    reason: str  # the one-line reason stored with the run

    @property
    def signature(self) -> tuple[str, str]:
        return self.step, self.kind


@dataclass
class FailurePolicy:
    max_failures: int = 3
    max_share: float = 0.5  # 1.0: never
    finished: int = 0
    failed: int = 0
    _streak: list[Failure] = field(default_factory=list)  # consecutive identical failures
    _first_of_variant: dict[str, list[Failure | None]] = field(default_factory=dict)

    def observe(self, variant: str, failure: Failure | None) -> str | None:
        """Record one finished run; the reason to stop now, or None to go on."""
        self.finished += 1
        self.failed += failure is not None
        firsts = self._first_of_variant.setdefault(variant, [])
        if len(firsts) < max(self.max_failures, 1):
            firsts.append(failure)
        if failure is None:
            self._streak.clear()
        elif self._streak and self._streak[-1].signature != failure.signature:
            self._streak[:] = [failure]
        else:
            self._streak.append(failure)
        n = self.max_failures
        if n > 0 and len(self._streak) >= n:
            return self._same_way(f"the last {n} runs", failure)
        if (
            n > 0
            and failure is not None
            and len(firsts) == n
            and all(f is not None and f.signature == failure.signature for f in firsts)
        ):
            return self._same_way(f"the first {n} runs of variant '{variant}'", failure)
        if (
            self.max_share < 1.0
            and self.finished >= MIN_RUNS_FOR_SHARE
            and self.failed > self.max_share * self.finished
        ):
            return (
                f"{self.failed} of {self.finished} runs failed, more than max_failure_share = "
                f"{self.max_share:.0%}; last: {failure.reason if failure else 'ok'}"
            )
        return None

    def _same_way(self, which: str, failure: Failure | None) -> str:
        assert failure is not None
        return (
            f"{which} failed the same way: {failure.reason} "
            f"(max_failures = {self.max_failures}; 0 never stops)"
        )
