"""The machine's CPU topology (from sysfs) and the choice of cores to pin work to.

`read_topology` does the I/O; `pick_cores` is pure, so any topology — read from this
machine or built by hand (hybrid P/E cores, SMT pairs, shared-L2 clusters) — can be
fed to it.
"""

from perflab.platform.pick import CoreChoice, pick_cores
from perflab.platform.topology import LogicalCpu, Topology, read_topology

__all__ = ["CoreChoice", "LogicalCpu", "Topology", "pick_cores", "read_topology"]
