"""`perflab show ID --run N` lists a kv phase's load as a command: the load engine as one
program (`perflab-load CONFIG`) with the configuration that ran — and that command, run
again, makes the same load against the same server."""

from __future__ import annotations

import json
import shlex
import subprocess

from cli_helpers import perflab, write_spec
from perflab.hosts.process import installed_program

SPEC = """\
name = "kv-cmds"
baseline = "a"
repetitions = 1

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "load"
kv = {{ server = "{server}", protocol = "memcache_text", requests = 300, ratio = "1:1", clients = 2, threads = 1, key_max = 100 }}

[[metric]]
name = "ops_per_sec"
unit = "ops/s"
better = "higher"
"""


def test_a_kv_phase_is_shown_as_the_command_that_reruns_it(tmp_path, memcached):
    spec = write_spec(tmp_path, SPEC.format(server=memcached.address))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    shown = perflab("show", "1", "--run", "1", "--store", str(db))
    assert shown.code == 0, shown.err
    assert "phase:load on –" in shown.out and "run in-process by perflab" in shown.out
    raw = perflab("show", "1", "--run", "1", "--artifact", "commands", "--store", str(db))
    assert raw.code == 0, raw.err
    (entry,) = [e for e in json.loads(raw.out) if e["step"] == "phase:load"]
    argv = shlex.split(entry["command"])
    assert argv[0] == "perflab-load" and f"$ {entry['command']}" in shown.out.replace("\n", "")
    config = json.loads(argv[1])
    assert config["requests"] and config["clients"] == 2  # the spec's load, normalised
    before = memcached.stats()
    program = installed_program("perflab-load")
    assert program is not None
    again = subprocess.run([program, argv[1]], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["status"] == "complete"
    after = memcached.stats()
    served = sum(int(after[k]) - int(before[k]) for k in ("cmd_get", "cmd_set"))
    assert served == 2 * 300  # the same load: 300 requests from each of 2 clients
