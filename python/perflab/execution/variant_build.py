"""A variant's ``build``: run here, on this machine, before the variant's first run and so
before its host boots into the kernel the variant names (a kernel under bisect is built
from ``{commit}`` this way, then booted by the host's control ``boot``).

Each variant is built once per perflab process: a resumed experiment builds again, which
costs little when the build keeps its results (a folder per commit). A build that fails
fails every run of its variant with the build's last lines, without building again — the
failure policy then stops an experiment whose variant cannot be built, and a bisect skips
a candidate that does not build. A build stopped by Ctrl-C is not a failure: its run stays
pending, and the next perflab builds again. Its output is kept with the variant's first
run after it (``stdout:build``, ``stderr:build``)."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from perflab.hosts.base import output_tail
from perflab.spec.template import render_shell
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    from perflab.execution.command import StepOutput
    from perflab.hosts.step import StepRequest
    from perflab.spec.schema import ExperimentSpec, VariantSpec

#: Lines of a failed build's output its runs' one-line reason quotes.
TAIL_LINES = 6
#: The step's name: in the reason, the artifacts and the failure policy.
STEP = "build"


@dataclass(frozen=True)
class Built:
    """A variant's build as its runs see it: why it failed (None: built), and the output
    to keep with the next run (given once)."""

    failure: str | None
    artifacts: dict[str, bytes] = field(default_factory=dict)


class BuildContext(Protocol):
    """What a build needs from the experiment (`perflab.execution.runner.Runner`)."""

    stop: threading.Event

    def request(self, name: str, command: str, folder: Path) -> StepRequest: ...
    def step(self, name: str, request: StepRequest) -> StepOutput: ...
    def experiment_values(self) -> dict[str, object]: ...


class VariantBuilds:
    """The builds of one experiment's variants, each run at most once (until it succeeds
    or fails; an interrupted one runs again)."""

    def __init__(self, model: ExperimentSpec, context: BuildContext):
        self.model = model
        self.context = context
        self._done: dict[str, Built] = {}
        self._told: set[str] = set()
        # A pool's devices ask from threads of their own: one lock per variant, so that a
        # device whose run needs a variant built already is not held up by another's build.
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def ensure(self, variant: VariantSpec, scratch: Path) -> Built | None:
        """The variant's build, run now if it has not run yet (None: it has none)."""
        if variant.build is None:
            return None
        with self._lock:
            lock = self._locks.setdefault(variant.name, threading.Lock())
        with lock:
            return self._ensure(variant, scratch)

    def _ensure(self, variant: VariantSpec, scratch: Path) -> Built | None:
        assert variant.build is not None
        done = self._done.get(variant.name)
        if done is not None:
            if variant.name in self._told:
                return dataclasses.replace(done, artifacts={})
            self._told.add(variant.name)
            return done
        values = {
            **self.model.params,
            **variant.params,
            **self.context.experiment_values(),
            "variant": variant.name,
        }
        command = render_shell(variant.build, values)
        folder = scratch / f"build-{variant.name}"
        folder.mkdir(parents=True, exist_ok=True)
        request = dataclasses.replace(
            self.context.request(STEP, command, folder), timeout=self.model.build_timeout
        )
        step = self.context.step(STEP, request)
        if self.context.stop.is_set():  # stopped: not a failure, built again next time
            return Built("stopped while building")
        artifacts = {
            str(keys.ArtifactKey("stdout", STEP)): step.stdout,
            str(keys.ArtifactKey("stderr", STEP)): step.stderr,
        }
        failure = None if step.ok else _failure(step)
        self._done[variant.name] = Built(failure, artifacts)
        self._told.add(variant.name)
        return self._done[variant.name]


def _failure(step: StepOutput) -> str:
    """One line: how the build ended and its output's last lines."""
    if step.error:
        return step.error
    what = step.process.describe_failure() if step.process else "did not run"
    tail = output_tail(step.stderr, TAIL_LINES) or output_tail(step.stdout, TAIL_LINES)
    return what + (f": {tail}" if tail else "")
