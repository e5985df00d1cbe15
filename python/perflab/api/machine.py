"""This machine as a place to measure on (`perflab check`, `perflab cores`): its state
(governor, turbo, SMT, load, memory, throttling, ASLR, perf_event_paranoid), its CPU
topology, and N cores to pin work to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.platform.system_state import SystemState


@dataclass(frozen=True)
class MachineCheck:
    """A machine's checks (`perflab check`): which machine, what it is, and its state."""

    host: str  # this machine's name, or the spec's name of the host
    facts: dict[str, Any]  # architecture, kernel_release, cpu_model, logical_cpus, memory…
    state: SystemState

    @property
    def summary(self) -> str:
        """``mips, Linux 6.1.0-47-4kc-malta, MIPS 24Kc V0.0, 1 CPU, 111.7 MiB``."""
        from perflab.platform.system_reading import human_bytes

        f = self.facts
        cpus = f.get("logical_cpus")
        memory = f.get("memory_total_bytes")
        parts = [
            f.get("architecture") or "unknown architecture",
            f"Linux {f['kernel_release']}" if f.get("kernel_release") else "unknown kernel",
            f.get("cpu_model") or "unknown CPU",
            f"{cpus} CPU{'s' if cpus != 1 else ''}" if cpus else "unknown CPUs",
            human_bytes(memory) if memory else "unknown memory",
        ]
        return ", ".join(str(p) for p in parts)

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "machine": self.facts, **self.state.to_json()}


#: The environment's facts a check names its machine by.
_FACTS = ("architecture", "kernel_release", "cpu_model", "logical_cpus", "memory_total_bytes")


def check_machine(
    spec_path: str | None = None,
    host: str | None = None,
    connecting: Callable[[str], None] = lambda _name: None,
) -> MachineCheck:
    """The checks of this machine, or of ``host`` of the experiment file ``spec_path`` read
    over SSH as an experiment reads it (a device reached by the portable sh path
    included; one booted from here must be up). InputError for a host the file does not
    name; HostError (one line) when it does not answer."""
    from perflab.hosts.environment import capture
    from perflab.hosts.local import LocalHost
    from perflab.platform.system_state import read_system_state

    if host is None:
        local = LocalHost()
        info = capture(local).info
        return MachineCheck(local.name, _facts(info), read_system_state())
    if spec_path is None:
        raise InputError(
            f"--host {host}: name the experiment file that defines it "
            f"(perflab check EXPERIMENT.toml --host {host})"
        )
    from perflab.execution.system_snapshots import ProcessTable
    from perflab.hosts.remote import RemoteHost
    from perflab.hosts.ssh import SshConnection, SshTarget
    from perflab.spec import load_spec
    from perflab.spec.name_rules import choices_hint

    spec = load_spec(spec_path)
    h = spec.model.hosts.get(host)
    if h is None:
        known = list(spec.model.hosts)
        raise InputError(
            f"--host {host}: {spec_path} has no [hosts.{host}]",
            hint=choices_hint(host, known) or f"its hosts: {', '.join(known) or 'none'}",
        )
    if h.ssh is None:
        raise InputError(
            f"--host {host}: lent by labgrid place {h.labgrid!r}, acquired only by a run; "
            "its checks are recorded with every experiment (perflab show ID --system)"
        )
    conn = SshConnection(SshTarget.parse(host, h.ssh, h.identity, h.jump, tuple(h.options)))
    connecting(host)  # the slow part begins (progress)
    try:
        conn.connect_once(CONNECT_S)
        remote = RemoteHost(conn, h.workdir, stage=False)
        info = capture(remote).info
        state = read_system_state(ProcessTable(remote), own_pid=None)
    finally:
        conn.close()
    return MachineCheck(host, _facts(info), state)


#: How long `check_machine` waits for a host's SSH.
CONNECT_S = 20.0


def _facts(info: dict[str, Any]) -> dict[str, Any]:
    return {k: info.get(k) for k in _FACTS}


def cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a list such as ``0,2-3`` (``--exclude``); empty text: none."""
    from perflab.hosts.proc_text import parse_cpu_list

    try:
        return parse_cpu_list(text) if text else frozenset()
    except ValueError:
        raise InputError(f"--exclude {text!r}: use a CPU list such as 0,2-3") from None
