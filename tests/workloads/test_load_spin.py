"""Spin before sleeping (`KvConfig.spin`, `perflab load --spin`), against real servers on
loopback: a worker waiting for a reply that comes within microseconds spins for it instead
of sleeping (and being woken by the server's send); `auto` does so only with few requests
in flight, and only where its probes find that spinning costs less CPU per reply than
sleeping (the controller itself is tested in crates/load/src/worker/spin.rs). Each I/O
loop is tested.

The process's voluntary context switches are its sleeps. This module runs alone (Makefile
`ALONE`): a busy neighbour on one of the two CPUs can keep memcached off a CPU for longer
than any spin."""

from __future__ import annotations

import resource

import pytest
from perflab.workloads.kv import KvConfig, KvConfigError, KvResult, as_config, run_kv
from servers import SlowMemcache
from test_load_io import uring_available

#: `auto` considers spinning with at most this many requests in flight (worker/spin.rs).
AUTO_MAX_INFLIGHT = 8
REQUESTS = 3000
LATE_S = 0.002  # the slow server's delay: no spin of 20 µs sees its reply


def backends() -> list[str]:
    return ["epoll", "uring"] if uring_available() else ["epoll"]


def one_at_a_time(address: str, io: str, spin: str, **kw) -> tuple[KvResult, float]:
    """One connection, one request in flight; the result and its sleeps per request."""
    cfg = {
        "server": address, "protocol": "memcache_text", "threads": 1, "clients": 1,
        "pipeline": 1, "ratio": "0:1", "requests": REQUESTS, "key_max": 1000, "io": io,
        "spin": spin,
    }  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    r = run_kv(KvConfig.model_validate({**cfg, **kw}))
    sleeps = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - before
    assert r.status == "complete", r.error
    return r, sleeps / r.metrics()["requests"]


def spins(r: KvResult) -> dict:
    return r.to_json()["client"]["spin"]


@pytest.mark.parametrize("io", backends())
def test_a_spin_before_each_wait_saves_most_sleeps(memcached, io):
    """Sleeping for each reply is a sleep per request; a 200 µs spin first sees nearly
    every reply come (memcached answers in microseconds) and sleeps for few."""
    off, sleeps_off = one_at_a_time(memcached.address, io, "off")
    on, sleeps_on = one_at_a_time(memcached.address, io, "200us")
    assert spins(off) == {"spins": 0, "caught": 0, "seconds": 0.0}
    assert sleeps_off > 0.3, sleeps_off  # (a reply already there at a round's start: no sleep)
    s = spins(on)
    assert s["spins"] > 0 and s["caught"] >= 0.5 * s["spins"], s
    assert 0 < s["seconds"] < 200e-6 * s["spins"]
    assert sleeps_on < 0.3 * sleeps_off, (sleeps_on, sleeps_off, s)
    assert on.to_json()["config"]["spin"] == pytest.approx(200)  # µs, as the engine reads it


@pytest.mark.parametrize("io", backends())
def test_auto_spins_only_with_few_requests_in_flight(memcached, io):
    """One request in flight: `auto` spins (its first epoch is a probe that does); 16 in
    flight: it spins only as the run's last requests drain (8 or fewer left in flight)."""
    few, _ = one_at_a_time(memcached.address, io, "auto")
    assert spins(few)["spins"] > 0, spins(few)
    many, _ = one_at_a_time(memcached.address, io, "auto", pipeline=16)
    assert spins(many)["spins"] <= AUTO_MAX_INFLIGHT, spins(many)


@pytest.mark.parametrize("io", backends())
def test_auto_spins_for_most_replies_one_at_a_time(memcached, io):
    """One connection at pipeline 1, for 2 s: client and server take turns, a reply comes
    tens of µs after its request, and spinning for it answers several times as many
    requests as sleeping for the same CPU per reply, so `auto` spins before most of them
    (with a 20 µs limit and a verdict on the CPU alone it spun before 5–6% of them in one
    run of two)."""
    r, _ = one_at_a_time(memcached.address, io, "auto", requests=None, test_time=2)
    s, n = spins(r), r.metrics()["requests"]
    assert s["spins"] > 0.5 * n and s["caught"] > 0.5 * s["spins"], (s, n)


@pytest.mark.parametrize("io", backends())
def test_auto_stops_spinning_where_replies_come_late(io):
    """A server that answers 2 ms late: a fixed spin spins before every wait and sees
    nothing come; `auto` spins in its probes only (an epoch of 32 replies in 16, which find
    that each spin adds its 20 µs to a reply's CPU)."""
    late = SlowMemcache(LATE_S)
    try:
        fixed, _ = one_at_a_time(late.address, io, "20us", requests=600)
        auto, _ = one_at_a_time(late.address, io, "auto", requests=600)
    finally:
        late.close()
    f = spins(fixed)
    assert f["spins"] >= 600 and f["caught"] == 0, f
    assert f["seconds"] >= 0.9 * f["spins"] * 20e-6, f  # each to its end (bar a timer's)
    a = spins(auto)
    assert 0 < a["spins"] <= 0.2 * f["spins"] and a["caught"] == 0, (a, f)


def test_a_spin_is_auto_off_or_a_duration_up_to_a_millisecond():
    assert KvConfig().spin == "auto" and KvConfig(spin="off").spin == "off"
    assert KvConfig(spin="20us").spin == pytest.approx(20e-6)
    assert KvConfig(spin="0.5ms").spin == pytest.approx(5e-4)
    for bad, said in [
        ("sometimes", 'must be "auto", "off" or a duration'),
        ("5ms", "at most 1 ms"),
        ("0", "positive"),
    ]:
        with pytest.raises(KvConfigError) as e:
            as_config({"spin": bad})
        assert e.value.field == "spin" and said in e.value.reason, (bad, e.value)
