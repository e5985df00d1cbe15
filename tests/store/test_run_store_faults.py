"""A store that fills up during `perflab run`: one line naming the store and the run that
could not be saved, exit 2, every run saved before intact, the run in flight marked
failed where the store still takes that small write, and no process left behind.

Which write meets the full disk is fixed, not left to chance: every run's writes are a
page or two except the save of run 5, whose 4 MB of output (3 MB compressed) is larger
than the whole disk, so that save and no earlier write is the one refused."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from cli_helpers import write_spec
from test_store_faults import CLI_FULL, SQLITE_SAYS, small_disk  # noqa: F401 (fixture)

SPEC = """\
name = "filler"
baseline = "a"
repetitions = 200
max_failures = 0

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "p"
# run 5 prints 4 MB of incompressible output, kept with the run: more than the disk holds
command = "if [ {run} -eq 5 ]; then head -c 3000000 /dev/urandom | base64 -w 0; fi; echo; echo '{{\\"v\\": {run}}}' >&2"

[[metric]]
name = "v"
better = "lower"
json = "v"
stream = "stderr"
"""


def test_full_disk_during_a_run_is_one_line_and_loses_nothing_saved(small_disk, tmp_path):  # noqa: F811
    folder, limit, how = small_disk
    store = folder / "p.db"
    spec = write_spec(tmp_path, SPEC)
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI_FULL,
            str(limit),
            "run",
            str(spec),
            "--store",
            str(store),
            "--no-compare",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert p.returncode == 0, p.stderr
    code, _out, err = json.loads(p.stdout.splitlines()[-1])
    assert code == 2
    last = err.strip().splitlines()[-1]
    says = SQLITE_SAYS[how]
    assert last.startswith(
        f"perflab: error: store {store}: cannot save run 5 of experiment 1: {says}"
    )
    assert last.endswith(
        "`perflab run --resume 1` finishes the experiment (the run in flight is done again))"
    )
    assert "Traceback" not in err
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    statuses = dict(db.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    assert statuses.get("ok", 0) == 4
    assert (
        statuses.get("running", 0) + statuses.get("failed", 0) == 1
    )  # the run in flight, not saved
    # every run reported saved has its value and its output
    for order, value in db.execute(
        "SELECT r.order_index, m.value FROM runs r JOIN metrics m "
        "ON m.run_id = r.id WHERE r.status='ok'"
    ):
        assert value == order + 1
    assert db.execute(
        "SELECT count(*) FROM artifacts a JOIN runs r ON a.run_id = r.id "
        "WHERE r.status='ok' AND a.name='stdout:phase:p'"
    ).fetchone() == (statuses["ok"],)
    db.close()
