"""Platform probes: outputs sane and self-validated, pinning honoured, named metrics with
units, CoreMark parsing (validated runs only), clear errors. Short durations only."""

from __future__ import annotations

import json
import os
import stat
from io import StringIO

import pytest
from perflab import _native
from perflab.cli import main
from perflab.errors import InputError
from perflab.workloads.probes import (
    SCHEMA_VERSION,
    memmove_cases,
    parse_coremark,
    run_probe,
    size_label,
)

CORE = max(os.sched_getaffinity(0))


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    rc = main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------- cpu


def test_cpu_probe_validates_and_pins():
    _native.probe_cpu_validate()  # golden checksums of every seed
    res = run_probe("cpu", core=CORE, repeat=2, duration=0.05)
    m = res.metrics()
    assert set(m) == {"cpu_iter_per_sec"} and res.units["cpu_iter_per_sec"] == "iterations/s"
    assert m["cpu_iter_per_sec"] > 0
    for r in res.raw:
        assert r["core"] == CORE  # it ran on the pinned core
        assert r["iterations"] > 0 and r["iter_per_sec"] == pytest.approx(
            r["iterations"] / r["seconds"]
        )
        assert 0 < r["cpu_seconds"] <= r["seconds"] * 1.05
    # Affinity is restored afterwards.
    assert os.sched_getaffinity(0) == set(_native.probe_allowed_cores())
    doc = res.to_json()
    assert doc["schema_version"] == SCHEMA_VERSION and doc["probe"] == "cpu"
    assert doc["summaries"]["cpu_iter_per_sec"]["n"] == 2
    json.dumps(doc)  # serialisable as is


# ----------------------------------------------------------------------------- memmove


def test_memmove_cases_are_the_router_experiments():
    assert memmove_cases() == {
        "small_no_miss": (172, 128),
        "small_tlbmiss": (172, 3549),
        "large_no_miss": (4096, 128),
        "large_cachemiss": (4096, 1024),
        "large_allmiss": (4096, 3071),
    }


def test_memmove_probe_verifies_every_copy():
    res = run_probe("memmove", core=CORE, repeat=1, duration=0.02)
    m = res.metrics()
    for name in memmove_cases():
        assert m[f"memmove_{name}_mib_per_sec"] > 0
    assert m["memmove_mib_per_sec"] == m["memmove_small_tlbmiss_mib_per_sec"]
    assert all(u == "MiB/s" for u in res.units.values())
    for r in res.raw:
        assert r["verified_blocks"] == r["buffers"]  # every byte of the working set checked
        assert r["mib_per_sec"] == pytest.approx(
            r["copies"] * r["copy_size"] / 2**20 / r["seconds"]
        )


def test_memmove_sweep_grid():
    res = run_probe(
        "memmove",
        repeat=1,
        duration=0.01,
        cases=["small_no_miss"],
        sweep=True,
        sweep_sizes=[64, 4096],
        sweep_buffers=[16, 3071],
    )
    sizes, bufs, cells = res.sweep_table()
    assert sizes == [64, 4096] and bufs == [16, 3071]
    assert all(v > 0 for v in cells.values()) and len(cells) == 4
    assert "memmove_sweep_4096b_3071buf_mib_per_sec" in res.metrics()


def test_memmove_bad_arguments():
    with pytest.raises(InputError, match="multiple of the ring step 5"):
        run_probe(
            "memmove",
            repeat=1,
            duration=0.01,
            cases=["small_no_miss"],
            sweep=True,
            sweep_sizes=[64],
            sweep_buffers=[100],
        )
    with pytest.raises(InputError, match="unknown memmove case"):
        run_probe("memmove", cases=["tiny"])


# ----------------------------------------------------------------------------- latency


def test_latency_probe_sees_the_memory_hierarchy():
    res = run_probe("latency", core=CORE, repeat=1, duration=0.02, max_size=64 << 20)
    rows = dict(res.latency_table())
    assert min(rows) == 4096 and max(rows) == 64 << 20 and len(rows) == 15
    assert all(set(d) == {"page", "random"} for d in rows.values())
    assert all(v > 0 for d in rows.values() for v in d.values())
    # 64 MiB randomly is far out of every cache and the TLB's reach; 4 KiB sits in L1.
    assert rows[64 << 20]["random"] > 3 * rows[4096]["random"]
    assert (
        "latency_random_64m_ns" in res.metrics() and res.units["latency_page_4k_ns"] == "ns/access"
    )


def test_latency_options():
    res = run_probe(
        "latency", repeat=1, duration=0.01, max_size=32 << 10, points_per_octave=2, orders=("page",)
    )
    sizes = [s for s, _ in res.latency_table()]
    assert sizes[:3] == [4096, 5760, 8192] and sizes[-1] == 32 << 10
    assert all(r["order"] == "page" for r in res.raw)
    with pytest.raises(InputError, match="need 4096 ≤ min ≤ max"):
        run_probe("latency", min_size=1024, max_size=8192)
    with pytest.raises(InputError, match="order"):
        run_probe("latency", orders=("zigzag",))


def test_size_labels():
    assert [size_label(x) for x in (4096, 2 << 20, 1 << 30, 5760)] == ["4k", "2m", "1g", "5760b"]


# ----------------------------------------------------------------------------- errors


def test_bad_probe_inputs():
    with pytest.raises(InputError, match="unknown probe"):
        run_probe("gpu")
    with pytest.raises(InputError, match="core 4096 is not available"):
        run_probe("cpu", core=4096)
    with pytest.raises(InputError, match="unknown option"):
        run_probe("cpu", sweep=True)
    with pytest.raises(InputError, match="repeat"):
        run_probe("cpu", repeat=0)
    with pytest.raises(InputError, match="duration"):
        run_probe("cpu", duration=-1)


# ----------------------------------------------------------------------------- CoreMark

COREMARK_OK = """\
2K performance run parameters for coremark.
CoreMark Size    : 666
Total ticks      : 15285
Total time (secs): 15.285000
Iterations/Sec   : 26169.447171
Iterations       : 400000
Compiler version : GCC12.2.0
Compiler flags   : -O2 -DPERFORMANCE_RUN=1  -lrt
Memory location  : Please put data memory location here
\t\t\t(e.g. code in flash, data on heap etc)
seedcrc          : 0xe9f5
[0]crclist       : 0xe714
[0]crcmatrix     : 0x1fd7
[0]crcstate      : 0x8e3a
[0]crcfinal      : 0x65c5
Correct operation validated. See README.md for run and reporting rules.
CoreMark 1.0 : 26169.447171 / GCC12.2.0 -O2 -DPERFORMANCE_RUN=1  -lrt / Heap
"""

COREMARK_SHORT = """\
2K performance run parameters for coremark.
CoreMark Size    : 666
Total ticks      : 1528
Total time (secs): 1.528000
Iterations/Sec   : 26178.010471
ERROR! Must execute for at least 10 secs for a valid result!
Iterations       : 40000
seedcrc          : 0xe9f5
Errors detected
"""


def test_parse_coremark_validated_only():
    s = parse_coremark(COREMARK_OK)
    assert s.iterations_per_sec == pytest.approx(26169.447171) and s.threads == 1
    assert s.per_core == pytest.approx(26169.447171) and s.iterations == 400000
    with pytest.raises(InputError) as e:
        parse_coremark(COREMARK_SHORT)
    assert "Must execute for at least 10 secs" in str(e.value)
    four = COREMARK_OK.replace(
        "Iterations       : 400000", "Iterations       : 400000\nParallel PThreads : 4"
    )
    assert parse_coremark(four).per_core == pytest.approx(26169.447171 / 4)


def _script(tmp_path, name: str, text: str, rc: int = 0) -> str:
    p = tmp_path / name
    body = tmp_path / f"{name}.txt"
    body.write_text(text)
    p.write_text(f"#!/bin/sh\n# replays a recorded CoreMark output\ncat '{body}'\nexit {rc}\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_run_coremark_binary(tmp_path):
    path = _script(tmp_path, "coremark.exe", COREMARK_OK)
    res = run_probe("cpu", coremark=path, repeat=2, core=CORE)
    assert res.metrics() == {"coremark_per_core": pytest.approx(26169.447171)}
    assert res.units == {"coremark_per_core": "iterations/s"}
    bad = _script(tmp_path, "short.exe", COREMARK_SHORT)
    with pytest.raises(InputError, match="does not report a validated run"):
        run_probe("cpu", coremark=bad, repeat=1)
    with pytest.raises(InputError, match="not an executable"):
        run_probe("cpu", coremark=str(tmp_path / "missing"), repeat=1)


# ----------------------------------------------------------------------------- CLI


def test_cli_probe_outputs():
    rc, out, err = cli(
        "probe", "cpu", "--core", str(CORE), "--repeat", "2", "--duration", "0.05", "--json"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert (
        doc["probe"] == "cpu"
        and doc["core"] == CORE
        and len(doc["samples"]["cpu_iter_per_sec"]) == 2
    )
    rc, out, err = cli(
        "probe",
        "memmove",
        "--case",
        "small_tlbmiss",
        "--repeat",
        "1",
        "--duration",
        "0.02",
        "--sweep",
        "--sweep-sizes",
        "172",
        "--sweep-buffers",
        "128,3549",
    )
    assert rc == 0, err
    assert "small_tlbmiss *" in out and "MiB/s" in out and "3549" in out
    rc, out, err = cli(
        "probe", "latency", "--max-size", "64K", "--repeat", "1", "--duration", "0.01"
    )
    assert rc == 0, err
    assert "TLB cost" in out and "64 KiB" in out
    rc, _, err = cli("probe", "latency", "--max-size", "lots")
    assert rc == 2 and "size 'lots'" in err
    rc, _, err = cli("probe", "cpu", "--core", "4096")
    assert rc == 2 and err.startswith("perflab: error: core 4096 is not available")


def test_probe_as_a_phase():
    from perflab.workloads.probes import phase_metrics

    values, units = phase_metrics(
        {"name": "memmove", "case": "small_tlbmiss", "duration": 0.02, "pages": "huge"}, core=CORE
    )
    assert set(values) == {"memmove_small_tlbmiss_mib_per_sec", "memmove_mib_per_sec"}
    assert values["memmove_mib_per_sec"] > 0 and units["memmove_mib_per_sec"] == "MiB/s"
    with pytest.raises(InputError, match="needs a probe name"):
        phase_metrics({"duration": 1})
    with pytest.raises(InputError, match="pages"):
        phase_metrics({"name": "memmove", "pages": "giant"})
