"""Rules for [hosts] and ``on``: where each command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.spec.name_rules import choices_hint
from perflab.spec.param_names import HOOKS

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath


def check_hosts(spec: Spec) -> None:
    """Every `on` names a host of [hosts] (or `local`); what runs elsewhere can."""
    m = spec.model
    known = ["local", *m.hosts]
    if "local" in m.hosts:
        raise spec.error(("hosts", "local"), "'local' is this machine; name the host otherwise")
    places: list[tuple[KeyPath, str | None]] = [
        ((name, "on"), getattr(m, name).on) for name in HOOKS if getattr(m, name)
    ]
    places += [(("variant", i, "on"), v.on) for i, v in enumerate(m.variant)]
    places += [(("phase", i, "on"), p.on) for i, p in enumerate(m.phase)]
    for loc, on in places:
        if on is not None and on not in known:
            raise spec.error(
                loc,
                f"unknown host '{on}'",
                hint=choices_hint(on, known) + " (hosts are [hosts.NAME])",
            )
    for i, v in enumerate(m.variant):
        if (v.kernel or v.cmdline or v.boot) and v.on in (None, "local"):
            raise spec.error(
                ("variant", i, "kernel" if v.kernel else "cmdline" if v.cmdline else "boot"),
                f"variant '{v.name}' names a kernel but runs on this machine, which perflab "
                "cannot reboot under itself: set on = a host of [hosts]",
            )
        if v.cmdline and not v.kernel:
            raise spec.error(("variant", i, "cmdline"), "cmdline is checked with kernel: set it")
    for i, p in enumerate(m.phase):
        if p.on in (None, "local"):
            continue
        if p.command is None:
            raise spec.error(
                ("phase", i, "on"),
                "on = places command phases; kv and probe phases run on this machine",
            )
        if p.cores is not None:
            raise spec.error(
                ("phase", i, "cores"),
                f"cores are picked on this machine, and phase '{p.name}' runs on '{p.on}': "
                "pin it there with taskset in its command",
            )
