"""The environment of every host an experiment uses, captured once per experiment (stored
by host name) with the versions of the tools named in the spec's ``tools`` and of the
well-known programs its commands run there (`perflab.hosts.tool_versions.command_tools`:
never a user's script). The Python and perflab running the experiment are recorded
once, in this machine's (the controller's) description, never in a device's."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perflab.execution.experiment_hosts import Hosts
    from perflab.hosts.base import Host
    from perflab.platform import CoreChoice
    from perflab.spec.schema import ExperimentSpec
    from perflab.store import Database


def capture_environments(
    store: Database,
    eid: int,
    model: ExperimentSpec,
    hosts: Hosts,
    local: Host,
    core_choices: dict[int, CoreChoice],
) -> None:
    """Captures and stores the environment of each host not yet stored for the experiment
    and up (a device booted from here is described after its first boot); this machine's
    records the cores picked (``core_choices``)."""
    from perflab.hosts.environment import capture
    from perflab.hosts.tool_versions import command_tools

    stored = store.environments(eid)
    places = hosts.places()  # hosts lent by a labgrid place: the place and its resources
    for name, commands in commands_by_host(model).items():
        executor = hosts[name]
        if executor.name in stored or (name is not None and hosts.is_down(name)):
            continue  # stored already, or a device not booted yet: after its first boot
        tools = list(dict.fromkeys([*model.tools, *command_tools(commands)]))
        env = capture(executor, tools=tools, controller=executor is local)
        info = dict(env.info)
        if core_choices and executor is local:
            info["picked_cores"] = {str(n): c.to_json() for n, c in core_choices.items()}
        if name in places:
            info["labgrid"] = places[name]
        store.put_environment(eid, executor.name, info, env.artifacts)


def commands_by_host(model: ExperimentSpec) -> dict[str | None, list[str]]:
    """Each host's commands (None: this machine, always there)."""
    from perflab.spec.phase_kinds import kind_of

    m = model
    out: dict[str | None, list[str]] = {None: []}
    hooks = (m.before_all, m.after_all, m.before_each, m.after_each)
    placed = [(h.on, h.command) for h in hooks if h]
    placed += [(v.on, c) for v in m.variant for c in (v.setup, v.teardown) if c]
    placed += [(p.host, c) for p in m.phase for c in kind_of(p).commands(p)]
    placed += [(s.on, s.command) for s in m.service]
    for on, command in placed:
        out.setdefault(None if on == "local" else on, []).append(command)
    # hosts with no command of their own: a kv phase's load machines, a kernel variant's host
    used = [h for p in m.phase for h in p.load_hosts] + [v.on for v in m.variant if v.on]
    for host in used:
        out.setdefault(None if host == "local" else host, [])
    return out
