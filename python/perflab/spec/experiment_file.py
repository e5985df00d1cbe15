"""A validated experiment file (`Spec`): its model, its text, and where each key is, to point
errors back to file:line. `perflab.spec.load` makes one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import SpecError
from perflab.spec.locate import Path as KeyPath
from perflab.spec.locate import find_line
from perflab.spec.schema import ExperimentSpec


@dataclass(frozen=True)
class Spec:
    """A validated experiment file plus what is needed to point back into it."""

    model: ExperimentSpec
    text: str
    path: Path | None = None
    lines: dict[KeyPath, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "<spec>"

    @property
    def workdir(self) -> Path:
        base = self.path.parent.resolve() if self.path else Path.cwd()
        return (base / self.model.workdir).resolve() if self.model.workdir else base

    def where(self, loc: KeyPath) -> str:
        line = find_line(self.lines, loc)
        return f"{self.label}:{line}" if line else self.label

    def error(self, loc: KeyPath, message: str, hint: str | None = None) -> SpecError:
        return SpecError(message, location=self.where(loc), hint=hint)
