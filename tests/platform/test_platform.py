"""CPU topology and core picking: synthetic topologies (hybrid P/E, SMT pairs, shared-L2
clusters, two packages), a sysfs tree on disk, and this machine."""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from perflab.cli import main
from perflab.errors import InputError, PerflabError
from perflab.hosts.proc_text import parse_cpu_list
from perflab.platform import LogicalCpu, Topology, pick_cores, read_topology


def cpu(n, siblings, l2=None, *, pkg=0, freq=None, kind=None, allowed=True, online=True, cap=None):
    return LogicalCpu(
        cpu=n,
        package=pkg,
        siblings=frozenset(siblings),
        l2=frozenset(l2) if l2 is not None else None,
        max_freq_khz=freq,
        capacity=cap,
        core_type=kind,
        online=online,
        allowed=allowed,
    )


def hybrid() -> Topology:
    """An Alder-Lake-like part: 4 P-cores with SMT (cpus 0-7, each core its own L2),
    8 E-cores in two clusters of 4 sharing an L2 (cpus 8-15)."""
    cpus = []
    for core in range(4):
        a, b = 2 * core, 2 * core + 1
        for n in (a, b):
            cpus.append(cpu(n, {a, b}, {a, b}, freq=4_700_000, kind="P"))
    for n in range(8, 16):
        cluster = set(range(8, 12)) if n < 12 else set(range(12, 16))
        cpus.append(cpu(n, {n}, cluster, freq=3_600_000, kind="E"))
    return Topology(tuple(cpus))


def smt_server(packages=1, cores=4) -> Topology:
    """SMT2 cores, sibling numbering like Linux on x86 (cpu c and c + total cores)."""
    total = packages * cores
    cpus = []
    for p in range(packages):
        for c in range(cores):
            first = p * cores + c
            sib = {first, first + total}
            for n in sib:
                cpus.append(cpu(n, sib, sib, pkg=p, freq=3_000_000))
    return Topology(tuple(sorted(cpus, key=lambda c: c.cpu)))


def l2_clusters() -> Topology:
    """An ARM-like part: 8 cores, no SMT, L2 shared by pairs (0,1) (2,3) (4,5) (6,7)."""
    return Topology(
        tuple(cpu(n, {n}, {n - n % 2, n - n % 2 + 1}, freq=2_000_000) for n in range(8))
    )


def siblings_of(topo: Topology, n: int) -> frozenset[int]:
    return topo.cpu(n).siblings


def test_parse_cpu_list():
    assert parse_cpu_list("0-3,8,10-11\n") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpu_list("5") == frozenset({5})


def test_hybrid_picks_p_cores_without_smt_siblings():
    topo = hybrid()
    ch = pick_cores(3, topo)
    assert len(ch.cpus) == 3
    assert all(topo.cpu(c).core_type == "P" for c in ch.cpus)
    # One thread per physical core.
    assert len({siblings_of(topo, c) for c in ch.cpus}) == 3
    assert ch.shared_l2_pairs == ()
    assert "P-core" in ch.core_type
    assert 0 not in ch.cpus  # CPU 0 avoided when there is a choice


def test_hybrid_falls_back_to_e_cores_and_spreads_over_l2_clusters():
    topo = hybrid()
    ch = pick_cores(5, topo)  # only 4 P-cores
    assert all(topo.cpu(c).core_type == "E" for c in ch.cpus)
    assert any("too few of the fastest cores" in n for n in ch.notes)
    # 5 E-cores over 2 L2 clusters: at least 3 + 2 — some share, and it says which.
    assert ch.shared_l2_pairs and any("share an L2" in n for n in ch.notes)
    left = [c for c in ch.cpus if c < 12]
    assert {len(left), len(ch.cpus) - len(left)} == {2, 3}
    ch2 = pick_cores(2, topo, core_type="E")
    assert ch2.shared_l2_pairs == () and {c < 12 for c in ch2.cpus} == {True, False}


def test_never_mixes_types_and_errors_when_impossible():
    topo = hybrid()
    with pytest.raises(PerflabError) as e:
        pick_cores(9, topo)
    msg = e.value.one_line()
    assert "cannot pick 9 cores of one type" in msg
    assert "4 physical core(s) of type P-core" in msg and "8 physical core(s) of type E-core" in msg


def test_smt_pairs_use_one_thread_per_core_and_exclude_whole_cores():
    topo = smt_server(cores=4)
    ch = pick_cores(4, topo)
    assert len({siblings_of(topo, c) for c in ch.cpus}) == 4
    with pytest.raises(PerflabError):
        pick_cores(5, topo)  # 8 threads but only 4 cores
    ch = pick_cores(3, topo, exclude={1})
    assert 1 not in ch.cpus and 5 not in ch.cpus  # 5 is 1's sibling
    with pytest.raises(PerflabError):
        pick_cores(4, topo, exclude={5})


def test_shared_l2_avoided_where_possible():
    topo = l2_clusters()
    ch = pick_cores(4, topo)
    assert ch.shared_l2_pairs == ()
    assert sorted(c // 2 for c in ch.cpus) == [0, 1, 2, 3]
    ch = pick_cores(6, topo)
    assert len(ch.shared_l2_pairs) == 2


def test_stays_on_one_package_when_it_can():
    topo = smt_server(packages=2, cores=4)
    ch = pick_cores(3, topo)
    assert {topo.cpu(c).package for c in ch.cpus} == {0}
    ch = pick_cores(6, topo)
    assert {topo.cpu(c).package for c in ch.cpus} == {0, 1}
    assert any("spans 2 packages" in n for n in ch.notes)


def test_frequency_defines_type_without_hybrid_info():
    # big.LITTLE without core-type PMUs: 2 fast, 4 slow; favoured cores within 10% are one type.
    cpus = [cpu(0, {0}, {0}, freq=3_000_000), cpu(1, {1}, {1}, freq=2_900_000)]
    cpus += [cpu(n, {n}, {n}, freq=1_800_000) for n in range(2, 6)]
    topo = Topology(tuple(cpus))
    ch = pick_cores(2, topo)
    assert (
        set(ch.cpus) == {0, 1} and ch.core_type == "max 3.00 GHz"
    )  # one type, named by its fastest
    assert set(pick_cores(3, topo).cpus) <= {2, 3, 4, 5}


def test_not_allowed_and_offline_cpus_are_skipped():
    cpus = [
        cpu(0, {0}, {0}),
        cpu(1, {1}, {1}, allowed=False),
        cpu(2, {2}, {2}, online=False),
        cpu(3, {3}, {3}),
    ]
    ch = pick_cores(2, Topology(tuple(cpus)))
    assert ch.cpus == (0, 3)


def test_bad_count():
    with pytest.raises(InputError):
        pick_cores(0, l2_clusters())


def _write(p: Path, text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def test_reads_a_sysfs_tree(tmp_path):
    """A sysfs layout with 2 SMT P-cores (0-3) and 2 E-cores sharing an L2 (4, 5)."""
    base = tmp_path / "sys/devices/system/cpu"
    _write(base / "present", "0-5")
    _write(base / "online", "0-5")
    _write(tmp_path / "sys/devices/cpu_core/cpus", "0-3")
    _write(tmp_path / "sys/devices/cpu_atom/cpus", "4-5")
    for n in range(6):
        d = base / f"cpu{n}"
        sib = f"{n - n % 2}-{n - n % 2 + 1}" if n < 4 else str(n)
        _write(d / "topology/thread_siblings_list", sib)
        _write(d / "topology/physical_package_id", "0")
        _write(d / "cpufreq/cpuinfo_max_freq", "5000000" if n < 4 else "3800000")
        _write(d / "cache/index0/level", "1")
        _write(d / "cache/index0/type", "Data")
        _write(d / "cache/index0/shared_cpu_list", sib)
        _write(d / "cache/index2/level", "2")
        _write(d / "cache/index2/type", "Unified")
        _write(d / "cache/index2/shared_cpu_list", sib if n < 4 else "4-5")
    topo = read_topology(tmp_path, allowed=set(range(6)))
    assert [c.core_type for c in topo.cpus] == ["P"] * 4 + ["E"] * 2
    assert topo.cpu(1).siblings == frozenset({0, 1})
    assert topo.cpu(4).l2 == frozenset({4, 5})
    assert topo.cpu(5).max_freq_khz == 3_800_000
    assert pick_cores(2, topo).cpus == (0, 2) or set(pick_cores(2, topo).cpus) == {0, 2}
    with pytest.raises(PerflabError):
        pick_cores(3, topo, core_type="P")
    e = pick_cores(2, topo, core_type="E")
    assert e.cpus == (4, 5) and e.shared_l2_pairs == ((4, 5),)


def test_this_machine():
    topo = read_topology()
    usable = topo.usable()
    assert usable and all(c.cpu in os.sched_getaffinity(0) for c in usable)
    cores = {c.siblings for c in usable}
    ch = pick_cores(1, topo)
    assert len(ch.cpus) == 1 and ch.cpus[0] in os.sched_getaffinity(0)
    with pytest.raises(PerflabError, match="cannot pick"):
        pick_cores(len(cores) + 1, topo)


def test_cli_cores(capsys):
    out, err = StringIO(), StringIO()
    assert main(["cores", "--pick", "1", "--json"], stdout=out, stderr=err) == 0
    doc = json.loads(out.getvalue())
    assert len(doc["cpus"]) == 1
    out = StringIO()
    assert main(["cores", "--pick", "1", "-q"], stdout=out, stderr=err) == 0
    assert out.getvalue().strip() == str(doc["cpus"][0])
    out = StringIO()
    assert main(["cores"], stdout=out, stderr=err) == 0
    assert "SMT siblings" in out.getvalue()
    err = StringIO()
    assert main(["cores", "--pick", "4096"], stdout=StringIO(), stderr=err) == 2
    assert err.getvalue().startswith("perflab: error: cannot pick 4096 cores")
