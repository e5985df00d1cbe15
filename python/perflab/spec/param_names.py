"""Names the rules share: the parameters a command template may use besides the spec's
own, and the hook tables that hold commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.spec.schema import ExperimentSpec

#: Names every command may use besides the spec's parameters.
BUILTIN_PARAMS = (
    "variant",
    "repetition",
    "run",
    "cell",
    "experiment",
    "run_dir",
    "seed",
    "block",
    "cores_list",
)

#: Built-in names whose value changes from run to run.
PER_RUN = ("repetition", "run", "cell", "run_dir", "seed", "block", "cores_list")

#: The experiment's hook tables, each holding one command.
HOOKS = ("before_all", "after_all", "before_each", "after_each")


def service_ports(m: Any) -> list[str]:
    """The parameters services give every command: ``{NAME_port}``."""
    return [f"{s.name}_port" for s in m.service if s.port is not None]


def pool_params(m: Any) -> list[str]:
    """The parameter a pool gives its runs' commands: ``{slot}``, the device's slot (0 …
    N−1: its place in a pool of places), so that a command run here reaches its device
    (``server = "127.0.0.1:1131{slot}"``)."""
    return ["slot"] if any(h.pooled for h in m.hosts.values()) else []


def all_variant_params(m: ExperimentSpec) -> set[str]:
    return {k for v in m.variant for k in v.params}
