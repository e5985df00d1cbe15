"""System snapshots of every host of an experiment, not only of this machine: a device
under test or a load machine whose conditions change spoils a comparison as much. Over a
real sshd on 127.0.0.1 (the "host" is this machine, so its snapshot must read what the
local one reads), and warnings that say which host they are about."""

from __future__ import annotations

import json
import socket

import pytest
from cli_helpers import perflab, write_spec
from perflab.analysis.system_conditions import system_warnings
from perflab.store import Database
from perflab.store.artifact_keys import SNAPSHOT_PREFIX
from sshd import start_sshd

pytestmark = pytest.mark.server

SPEC = """\
name = "snapshots"
baseline = "a"
repetitions = 2

[hosts.dut]
{host_table}
[[variant]]
name = "a"
[[variant]]
name = "b"
[[phase]]
name = "p"
on = "dut"
command = "echo v=$(( 100 + {{repetition}} ))"
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def _checks(doc):
    return {c["name"]: c for c in doc["checks"]}


def test_every_host_is_snapshotted_at_the_same_moments(tmp_path):
    with start_sshd() as sshd:
        spec = write_spec(tmp_path, SPEC.format(host_table=sshd.host_table()))
        db = tmp_path / "p.db"
        r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db, write=False) as s:
        names = [n for n, _ in s.artifact_names(1) if n.startswith(SNAPSHOT_PREFIX)]
        docs = [json.loads(s.artifact(1, n) or b"") for n in names]
    by_host: dict[str, list[dict]] = {}
    for d in docs:
        by_host.setdefault(d["host"], []).append(d)
    assert set(by_host) == {socket.gethostname(), "dut"}
    local, dut = by_host[socket.gethostname()], by_host["dut"]
    assert [d["label"] for d in dut] == [d["label"] for d in local]
    assert [d["label"] for d in dut][:1] == ["start"] and len(dut) >= 2
    for mine, theirs in zip(local, dut):
        a, b = _checks(mine), _checks(theirs)
        assert set(a) == set(b)
        # the same machine read two ways: the settings agree
        for name in ("governor", "smt", "aslr", "perf_event_paranoid"):
            assert a[name]["value"] == b[name]["value"], name
        assert a["memory"]["data"]["total"] == b["memory"]["data"]["total"]
        # the busiest-processes check read /proc over SSH (one command per listing)
        assert b["processes"]["status"] != "unknown", b["processes"]
        assert b["processes"]["data"]["seconds"] > 0


def test_warnings_of_several_hosts_say_which_host():
    def snap(host, label, governor, variants):
        return {
            "host": host,
            "label": label,
            "variants": variants,
            "checks": [{"name": "governor", "status": "ok", "value": governor, "data": {}}],
        }

    snaps = [
        snap("ctl", "start", "performance", []),
        snap("dut", "start", "performance", []),
        snap("ctl", "after block 1", "performance", ["a", "b"]),
        snap("dut", "after block 1", "powersave", ["a", "b"]),
    ]
    (w,) = system_warnings(snaps)
    assert w.code == "governor_changed" and w.details["host"] == "dut"
    assert w.message.startswith("on host dut: the CPU governor changed during the experiment")
    # one host: worded as before, with no host
    (one,) = system_warnings([s for s in snaps if s["host"] == "dut"])
    assert one.message.startswith("the CPU governor changed") and "host" not in one.details
    assert system_warnings([s for s in snaps if s["host"] == "ctl"]) == []
