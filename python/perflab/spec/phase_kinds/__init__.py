"""The kinds of phase, as plug-ins: a shell command (``command = "..."``), the built-in
key-value load (``[phase.kv]``), a platform probe (``[phase.probe]``) — and any kind
registered here.

A kind is two modules of one name: ``perflab/spec/phase_kinds/NAME.py`` (`base.PhaseKind`:
its key and the type of its value, its rules, the metric names it reports) and
``perflab/run/phase_kinds/NAME.py`` (its execution and profiling). Nothing else names a
kind: the schema validates each registered kind's key where a phase has it, the rules ask
the kind what its phase may do, a run asks the kind's runner to run it. A kind defined
outside perflab registers itself (`register`), its runner given whole.

A phase has exactly one kind's key; which one is asked in one place (`kind_of`, and
`PhaseSpec.kind_keys` for the rule that there is exactly one).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from perflab.spec.phase_kinds.base import PhaseKind

if TYPE_CHECKING:
    from perflab.spec.schema import PhaseSpec

__all__ = [
    "BUILTIN",
    "PhaseKind",
    "choice",
    "kind_of",
    "kinds",
    "register",
    "schemas",
    "unregister",
]

#: perflab's kinds, each the module ``perflab.spec.phase_kinds.NAME`` (defining ``KIND``),
#: in the order their keys are listed: a new kind is one more name here.
BUILTIN = ("command", "kv", "probe")

_KINDS: dict[str, PhaseKind] = {}


def _builtins() -> dict[str, PhaseKind]:
    if not _KINDS:
        for name in BUILTIN:
            kind: PhaseKind = importlib.import_module(f"perflab.spec.phase_kinds.{name}").KIND
            _KINDS[kind.key] = kind
    return _KINDS


def register(kind: PhaseKind) -> PhaseKind:
    """Adds a kind (after perflab's own); its key must be new. Returns it."""
    known = _builtins()
    if not kind.key.isidentifier() or kind.key in known:
        raise ValueError(f"phase kind key {kind.key!r}: taken, or not an identifier")
    known[kind.key] = kind
    return kind


def unregister(key: str) -> None:
    """Removes a kind added by `register` (perflab's own stay)."""
    if key in BUILTIN:
        raise ValueError(f"'{key}' is one of perflab's phase kinds")
    _builtins().pop(key, None)


def kinds() -> list[PhaseKind]:
    """Every kind, in the order their keys are listed."""
    return list(_builtins().values())


def schemas() -> dict[str, Any]:
    """Each kind's key → the type of its value: what the schema validates a phase with
    (`perflab.spec.schema.PHASE_KINDS`)."""
    return {k.key: k.schema for k in kinds()}


def kind_of(phase: PhaseSpec) -> PhaseKind:
    """The kind of a phase of a valid spec (its one kind's key)."""
    return _builtins()[phase.kind_keys[0]]


def choice() -> str:
    """The kinds' keys as a message lists them: "'command', 'kv' or 'probe'"."""
    keys = [f"'{k.key}'" for k in kinds()]
    return " or ".join([", ".join(keys[:-1]), keys[-1]] if len(keys) > 1 else keys)
