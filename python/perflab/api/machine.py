"""This machine as a place to measure on (`perflab check`, `perflab cores`): its state
(governor, turbo, SMT, load, memory, throttling, ASLR, perf_event_paranoid), its CPU
topology, and N cores to pin work to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.errors import InputError

if TYPE_CHECKING:
    from perflab.platform.pick import CoreChoice as CoreChoice
    from perflab.platform.system_state import SystemState as SystemState
    from perflab.platform.topology import Topology as Topology


def system_state() -> SystemState:
    """Every check, read now (~0.25 s: the busiest processes are measured over it)."""
    from perflab.platform.system_state import read_system_state

    return read_system_state()


def topology() -> Topology:
    from perflab.platform import read_topology

    return read_topology()


def cpu_list(text: str) -> frozenset[int]:
    """The CPUs of a list such as ``0,2-3`` (``--exclude``); empty text: none."""
    from perflab.platform import parse_cpu_list

    try:
        return parse_cpu_list(text) if text else frozenset()
    except ValueError:
        raise InputError(f"--exclude {text!r}: use a CPU list such as 0,2-3") from None


def pick_cores(count: int, *, core_type: str | None, exclude: frozenset[int]) -> CoreChoice:
    """``count`` cores of one type, no two SMT siblings, avoiding shared L2 caches where
    possible, none of ``exclude``."""
    from perflab.platform import pick_cores as pick

    return pick(count, topology(), core_type=core_type, exclude=exclude)
