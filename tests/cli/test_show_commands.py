"""`perflab show ID --run N`: each step's command as it ran ({param}s substituted), its host
and the variables perflab added to its environment — kept per run as the ``commands``
artifact, shown escaped, and missing (without harm) from runs stored before it."""

from __future__ import annotations

import json
import socket
import sqlite3

from cli_helpers import perflab, write_spec

SPEC = """\
name = "cmds"
baseline = "a"
repetitions = 1
before_each = "echo before {{run}}"
after_each = "echo after {{variant}}"

[env]
SPEC_VAR = "from-spec"

[params]
word = "{word}"

[matrix]
n = [7]

[[variant]]
name = "a"
setup = "echo setup {{variant}}"
teardown = "echo teardown"
env = {{ VARIANT_VAR = "va" }}
[[variant]]
name = "b"
params = {{ word = "bee" }}

[[phase]]
name = "work"
command = "{work}"
env = {{ PHASE_VAR = "ph-{{n}}" }}

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
"""


def _run(tmp_path, *, word="hello", work="echo {word} {n} {variant}"):
    text = SPEC.format(word=word, work=work)
    spec = write_spec(tmp_path, text)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    return r, db


def _commands(db, variant):
    con = sqlite3.connect(db)
    try:
        (run_index,) = con.execute(
            "SELECT order_index FROM runs WHERE variant=?", (variant,)
        ).fetchone()
    finally:
        con.close()
    r = perflab("show", "1", "--run", str(run_index + 1), "--store", str(db), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    raw = perflab(
        "show", "1", "--run", str(run_index + 1), "--store", str(db), "--artifact", "commands"
    )
    assert json.loads(raw.out) == doc["commands"]  # the artifact, exact
    return run_index + 1, doc["commands"]


def test_each_step_is_recorded_as_run(tmp_path):
    r, db = _run(tmp_path)
    assert r.code == 0, r.err
    n, cmds = _commands(db, "a")
    assert [c["step"] for c in cmds] == [
        "before_each",
        "setup",
        "phase:work",
        "teardown",
        "after_each",
    ]
    by_step = {c["step"]: c for c in cmds}
    assert by_step["before_each"]["command"] == f"echo before {n}"
    assert by_step["setup"]["command"] == "echo setup a"
    assert by_step["phase:work"]["command"] == "echo hello 7 a"
    assert by_step["after_each"]["command"] == "echo after a"
    assert {c["host"] for c in cmds} == {socket.gethostname()}
    work_env = by_step["phase:work"]["env"]
    assert work_env["SPEC_VAR"] == "from-spec"
    assert work_env["VARIANT_VAR"] == "va"
    assert work_env["PHASE_VAR"] == "ph-{n}"  # env values are not templates
    assert work_env["PERFLAB_RUN"] == str(n) and work_env["PERFLAB_VARIANT"] == "a"
    assert "PATH" not in work_env and "HOME" not in work_env  # only what perflab added
    assert "PHASE_VAR" not in by_step["setup"]["env"]  # a phase's env is its own

    _, cmds_b = _commands(db, "b")
    work_b = next(c for c in cmds_b if c["step"] == "phase:work")
    assert work_b["command"] == "echo bee 7 b" and "VARIANT_VAR" not in work_b["env"]

    shown = perflab("show", "1", "--run", str(n), "--store", str(db))
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert "── commands (5 steps)" in lines
    assert f"phase:work on {socket.gethostname()}" in lines
    assert "  $ echo hello 7 a" in lines
    assert "  env VARIANT_VAR=va" in lines
    assert f"  env PERFLAB_RUN={n}" in lines
    assert not any(line.startswith("── commands (") and "bytes" in line for line in lines)


def test_a_failing_step_and_the_clean_up_after_it_are_recorded(tmp_path):
    r, db = _run(tmp_path, work="sh -c 'exit 3' {n}")
    assert r.code == 1
    _, cmds = _commands(db, "a")
    assert [c["step"] for c in cmds] == [
        "before_each",
        "setup",
        "phase:work",
        "teardown",
        "after_each",
    ]
    assert cmds[2]["command"] == "sh -c 'exit 3' 7"


def test_commands_are_shown_escaped(tmp_path):
    r, db = _run(tmp_path, word="x\\u001b[2Jy")
    assert r.code == 0, r.err
    n, cmds = _commands(db, "a")
    work = next(c for c in cmds if c["step"] == "phase:work")
    assert work["command"] == "echo 'x\x1b[2Jy' 7 a"  # as the shell got it (quoted), exact
    shown = perflab("show", "1", "--run", str(n), "--store", str(db))
    assert "\x1b" not in shown.out
    assert "  $ echo 'x\\x1b[2Jy' 7 a" in shown.out.splitlines()


def test_a_run_stored_before_the_artifact_still_shows(tmp_path):
    r, db = _run(tmp_path)
    assert r.code == 0, r.err
    con = sqlite3.connect(db)
    with con:
        con.execute("DELETE FROM artifacts WHERE name='commands'")
    con.close()
    shown = perflab("show", "1", "--run", "1", "--store", str(db))
    assert shown.code == 0, shown.err
    assert "── commands" not in shown.out
    assert "── stdout:phase:work" in shown.out
    doc = perflab("show", "1", "--run", "1", "--store", str(db), "--json")
    assert doc.code == 0 and json.loads(doc.out)["commands"] is None
