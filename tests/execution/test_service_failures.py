"""Services that cannot start: one that exits before it is ready (status 0 included:
a VM whose kernel panicked) fails at once with its exit status and output, not at its
`ready_timeout`; a variant-scope one that fails fails that variant's runs, and the
other variants' runs go on (only an experiment-scope service stops the experiment)."""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter

import pytest
from cli_helpers import perflab_process, write_spec
from perflab.store import Database
from proc_helpers import all_gone
from test_services import HEAD, METRIC
from test_services import _run as run_services

pytestmark = pytest.mark.server

PHASE = """
[[phase]]
name = "p"
command = "echo v=1"
"""
TAIL = PHASE + METRIC


def _run(tmp_path, body: str, *args: str):
    return run_services(tmp_path, body + PHASE, *args)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        # exits 0 and leaves nothing running: it can never become ready
        (
            "echo starting; echo boom >&2; exit 0",
            "service:x: exited with status 0 before it was ready, leaving nothing running: boom",
        ),
        # exits 0 having printed nothing: said so
        ("exit 0", "leaving nothing running (it printed nothing)"),
        # exits with a failure leaving a process behind: fails at once, the process stopped
        ("sleep 600 & echo $! >> {pids}; echo one >&2; echo two >&2; exit 3", "3: one | two"),
    ],
)
def test_a_service_that_exits_before_it_is_ready_fails_at_once(tmp_path, command, reason):
    pids = tmp_path / "pids"
    # A ready_timeout of an hour: the test ends at all only because the wait ends when the
    # service exits (a port nobody opens never answers).
    body = f"""
[[service]]
name = "x"
port = "{{free_port}}"
command = "{command.format(pids=pids)}"
ready = "tcp://127.0.0.1:{{port}}"
ready_timeout = "1h"
"""
    r, db = _run(tmp_path, body, "--max-failures", "0")
    assert r.code == 1, r.err
    with Database(db) as s:
        runs = s.runs(1)
    assert len(runs) == 4 and {x.status for x in runs} == {"failed"}
    for run in runs:
        assert "service 'x' did not start" in run.reason and reason in run.reason, run.reason
        assert "not ready within" not in run.reason
    if pids.exists():
        all_gone([int(p) for p in pids.read_text().split()])


def test_a_failing_variant_scope_service_fails_that_variants_runs_only(tmp_path):
    starts = tmp_path / "starts"
    body = f"""
[[service]]
name = "per_variant"
scope = "variant"
command = "echo {{variant}} >> {starts}; if [ {{variant}} = b ]; then echo boom-b >&2; exit 3; fi; echo listening; exec sleep 600"
ready = "log:^listening$"
ready_timeout = "1h"
"""
    r, db = _run(tmp_path, body)
    assert r.code == 1, r.err  # runs failed
    assert "2 failed runs and 2 ok" in r.err and "Traceback" not in r.err
    with Database(db) as s:
        experiment = s.experiment(1)
        runs = sorted(s.runs(1), key=lambda x: x.order_index)
        outputs = [s.artifact(1, "stderr:service:per_variant", x.id) for x in runs]
    assert experiment.status == "complete"  # every run was done: none left pending
    assert Counter((x.variant, x.status) for x in runs) == {("a", "ok"): 2, ("b", "failed"): 2}
    for run in runs:
        if run.variant == "b":
            assert "service 'per_variant' did not start" in run.reason
            assert "exited with status 3: boom-b" in run.reason
    # its output is kept with the first run of each stretch of b's runs it failed
    stretches = [v for v, _ in itertools.groupby(x.variant for x in runs)]
    assert sum(o == b"boom-b\n" for o in outputs) == stretches.count("b")
    assert starts.read_text().split() == stretches  # started once per stretch, b included


def test_readiness_is_never_read_from_a_previous_starts_output(tmp_path):
    # Variant a's start prints the ready line; b's never does, so b is never ready (its
    # start must not read a's output, left in the same folder under the same name).
    body = """
[[service]]
name = "per_variant"
scope = "variant"
command = "if [ {variant} = a ]; then echo listening; fi; exec sleep 600"
ready = "log:^listening$"
ready_timeout = "1s"
"""
    r, db = _run(tmp_path, body)
    assert r.code == 1, r.err
    with Database(db) as s:
        runs = s.runs(1)
    assert Counter((x.variant, x.status) for x in runs) == {("a", "ok"): 2, ("b", "failed"): 2}
    assert all("not ready within 1 s" in x.reason for x in runs if x.variant == "b")


def test_ctrl_c_while_a_service_gets_ready_stops_at_once_resumably(tmp_path):
    started = tmp_path / "started"
    body = f"""
[[service]]
name = "x"
command = "echo $$ >> {started}; exec sleep 600"
ready = "tcp://127.0.0.1:1"
ready_timeout = "1h"
"""
    spec = write_spec(tmp_path, HEAD + body + TAIL)
    db = tmp_path / "p.db"
    p = perflab_process("run", str(spec), "--store", str(db), "--no-compare")
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        # an hour's ready_timeout: it ends in time only because the wait heeds the request
        _out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, err
    assert "resume with: perflab run --resume 1" in err and "Traceback" not in err
    all_gone([int(x) for x in started.read_text().split()])  # the service was stopped
    with Database(db) as s:
        assert s.experiment(1).status == "interrupted"
        assert {x.status for x in s.runs(1)} == {"pending"}  # the run in flight goes back
