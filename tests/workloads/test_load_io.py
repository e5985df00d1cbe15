"""The load generator's two I/O loops (io_uring and epoll) give the same load, the result
says which ran, and a CPU-bound client is warned about in one line (CLI and kv phase)."""

from __future__ import annotations

import json
import types
from io import StringIO

import pytest
from perflab import _native
from perflab.cli import main
from perflab.workloads.kv import KvConfig, KvConfigError, KvResult, run_kv


def uring_available() -> bool:
    try:
        r = run_kv(KvConfig(server="127.0.0.1:1", io="uring", requests=1, threads=1, clients=1))
    except KvConfigError as e:  # refused as a configuration: io_uring is not allowed here
        assert "io_uring is not available here" in str(e)
        return False
    return r.io == "uring"


def fixed_load(address: str, io: str, ratio: str) -> KvResult:
    return run_kv(
        KvConfig(
            server=address,
            protocol="memcache_text",
            threads=2,
            clients=4,
            pipeline=8,
            ratio=ratio,
            requests=3000 if ratio == "0:1" else "allkeys",
            key_min=1,
            key_max=4000,
            key_pattern="P:P" if ratio == "1:0" else "R:R",
            data_size=200,
            verify=True,
            io=io,
        )
    )


def test_uring_and_epoll_give_identical_counts_and_correct_values(memcached):
    backends = ["epoll", "uring"]
    if not uring_available():
        pytest.skip("io_uring is not allowed on this kernel")
    populate = fixed_load(memcached.address, "uring", "1:0")
    assert (populate.status, populate.io) == ("complete", "uring"), populate.error
    assert populate.metrics()["requests"] == 4000 and populate.errors.total == 0
    counts = {}
    for io in backends:
        r = fixed_load(memcached.address, io, "0:1")
        assert r.status == "complete", r.error
        assert r.io == io and r.to_json()["io"] == io
        m = r.metrics()
        assert m["verify_failures"] == 0
        assert m["misses_per_sec"] == 0, "every key was written"
        assert r.errors.total == 0
        counts[io] = (m["requests"], r.to_json()["gets"]["hits"])
    assert counts["uring"] == counts["epoll"] == (2 * 4 * 3000, 2 * 4 * 3000)


def test_replies_larger_than_the_receive_buffers_arrive_whole(memcached):
    # at one connection the io_uring loop has 8 receive buffers of 16 KiB: a pipeline of 8
    # GETs of 100 KB values brings 800 KB at once, so receives run out of buffers, stop and
    # are armed again mid-batch; every value must still arrive whole and in order
    if not uring_available():
        pytest.skip("io_uring is not allowed on this kernel")

    def run(ratio: str, requests: int | str) -> KvResult:
        return run_kv(
            KvConfig(
                server=memcached.address,
                protocol="memcache_binary",
                threads=1,
                clients=1,
                pipeline=8,
                ratio=ratio,
                requests=requests,
                key_min=1,
                key_max=40,
                key_pattern="P:P" if ratio == "1:0" else "R:R",
                data_size=100_000,
                verify=True,
                io="uring",
            )
        )

    populate = run("1:0", "allkeys")
    assert populate.status == "complete" and populate.errors.total == 0, populate.error
    r = run("0:1", 400)
    assert (r.status, r.io) == ("complete", "uring"), r.error
    m = r.metrics()
    assert (m["requests"], r.to_json()["gets"]["hits"]) == (400, 400)
    assert m["verify_failures"] == 0 and r.errors.total == 0


def test_auto_reports_the_backend_it_chose(memcached):
    r = run_kv(
        KvConfig(
            server=memcached.address, protocol="memcache_text", requests=10, threads=1, clients=1
        )
    )
    assert r.status == "complete"
    assert r.io == ("uring" if uring_available() else "epoll")


def test_io_option_reaches_the_engine():
    assert KvConfig(io="epoll").to_engine()["io"] == "epoll"
    assert KvConfig().to_engine()["io"] == "auto"
    out, err = StringIO(), StringIO()
    assert main(["load", "--io", "poll"], stdout=out, stderr=err) == 2
    assert "invalid choice: 'poll'" in err.getvalue()


def saturated(doc: dict[str, object]) -> KvResult:
    """`doc` with its client threads made busy all the time, read back by the engine."""
    client = doc["client"]
    assert isinstance(client, dict)
    for t in client["threads"]:
        t["wall_s"], t["user_s"], t["system_s"] = 2.0, 1.9, 0.05
    return KvResult(json.loads(_native.kv_merge([json.dumps(doc)])))


def test_cpu_bound_client_is_warned_in_one_line_by_the_cli_and_the_kv_phase(memcached, monkeypatch):
    from perflab.execution.kv_phase import kv_phase_result
    from perflab.workloads import kv

    real = run_kv(
        KvConfig(
            server=memcached.address, protocol="memcache_text", requests=200, threads=1, clients=2
        )
    )
    busy = saturated(real.to_json())
    codes = [w.code for w in busy.warnings]
    assert "client_cpu_saturated" in codes
    monkeypatch.setattr(kv, "run_kv", lambda *a, **k: busy)
    out, err = StringIO(), StringIO()
    host, port = memcached.address.split(":")
    assert (
        main(["load", "-s", host, "-p", port, "-P", "memcache_text"], stdout=out, stderr=err) == 0
    )
    warning = [line for line in err.getvalue().splitlines() if "CPU core" in line]
    assert len(warning) == 1, err.getvalue()
    assert warning[0].startswith("perflab: warning: client thread 0 used 98% of a CPU core")
    assert "may be the limit" in warning[0]
    phase = kv_phase_result(types.SimpleNamespace(name="load"), busy, timeout=None, stop=None)  # type: ignore[arg-type]
    assert phase.output is not None and "client_cpu_saturated: " in phase.output.stderr
    assert "client_cpu_saturated" in phase.artifacts["stderr:phase:load"].decode()
