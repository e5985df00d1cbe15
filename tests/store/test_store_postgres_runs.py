"""Real experiments on a PostgreSQL store (a server on loopback: pg.py): the commands read
it as they read SQLite; two perflab processes run experiments into it at once and every
run lands whole in its own experiment; a controller killed with SIGKILL mid-run loses
nothing that was recorded, its experiment is locked while it lives and resumed after; a
server gone mid-run stops the experiment in one line, resumed once it is back."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import psycopg
import pytest
from cli_helpers import perflab, perflab_process, write_spec
from perflab.store.copy import copy_store
from pg import start_postgres

pytestmark = [pytest.mark.server, pytest.mark.slow]

#: Each run prints its experiment's tag, its cell and its number: its stored values say
#: whose run it is (and, with warm-ups, wall time, logs and artifacts, everything is there).
SPEC = """\
name = "{name}"
baseline = "a"
repetitions = {reps}
warmup = 1

[params]
tag = {tag}
log = "{log}"

[matrix]
n = [1, 2]

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "work"
command = "echo start {{run}} >> {{log}}; sleep {sleep}; echo end {{run}} >> {{log}}; echo tag={{tag}} cell={{n}} run={{run}}"

[[metric]]
name = "wall_time"
better = "lower"
[[metric]]
name = "tag"
regex = "tag=(?P<value>[0-9]+)"
better = "higher"
[[metric]]
name = "n"
regex = "cell=(?P<value>[0-9]+)"
better = "higher"
[[metric]]
name = "run"
regex = "run=(?P<value>[0-9]+)"
better = "higher"
"""


def spec(folder: Path, name: str, *, tag: int, reps: int = 2, sleep: float = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SPEC.format(name=name, reps=reps, tag=tag, log=folder / "log.txt", sleep=sleep)
    return write_spec(folder, text)


def rows(url: str, sql: str, *args: object) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def wait_for(url: str, sql: str, predicate, timeout: float = 60.0) -> list[tuple]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            got = rows(url, sql)
        except psycopg.errors.UndefinedTable:  # the store is not made yet
            got = []
        if got and predicate(got):
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {sql}")


def check_runs(url: str, eid: int, tag: int) -> None:
    """Every run of experiment ``eid`` ok, once, with its own values: its tag, its cell's n,
    its number (runs of another experiment never mixed in)."""
    got = rows(
        url,
        "SELECT r.order_index, r.cell_key, r.status, m.name, m.value FROM runs r"
        " JOIN metrics m ON m.run_id = r.id WHERE r.experiment_id = %s AND m.name <> 'wall_time'"
        " ORDER BY r.order_index, m.name",
        eid,
    )
    by_run: dict[int, dict[str, float]] = {}
    for order, cell, status, name, value in got:
        assert status == "ok"
        by_run.setdefault(order, {"cell": float(cell[2:])})[name] = value
    assert list(by_run) == list(range(len(by_run))) and len(by_run) >= 12
    for order, v in by_run.items():
        assert v == {"cell": v["n"], "n": v["n"], "run": order + 1, "tag": tag}, (order, v)


def _normalized(text: str, *stores: str) -> str:
    for s in stores:
        text = text.replace(s, "STORE")
    return re.sub(r"--store \S+", "--store STORE", text)


def test_commands_read_a_postgres_store_as_they_read_sqlite(pg_url, tmp_path):
    """An experiment run into PostgreSQL, then copied into SQLite: ls, show, compare,
    report and export say the same of both, byte for byte (the store's name aside)."""
    r = perflab("run", str(spec(tmp_path, "same", tag=7)), "--store", pg_url)
    assert r.code == 0, r.err
    assert "TLDR — b vs a" in r.out
    check_runs(pg_url, 1, 7)
    lite = tmp_path / "copy.db"
    copy_store(pg_url, lite)
    commands = [
        ["ls"], ["ls", "--json"], ["show", "1"], ["show", "last", "--json"],
        ["show", "same", "--runs"], ["show", "1", "--run", "3"], ["compare", "1"],
        ["compare", "last", "--format", "json"], ["compare", "1", "--format", "markdown"],
        ["report", "1", "--json", "-o", "-"],
    ]  # fmt: skip
    for argv in commands:
        a, b = perflab(*argv, "--store", pg_url), perflab(*argv, "--store", str(lite))
        assert a.code == b.code == 0, (argv, a.err, b.err)
        assert _normalized(a.out, pg_url) == _normalized(b.out, str(lite)), argv
    for store, out in ((pg_url, "pg.csv"), (str(lite), "lite.csv")):
        assert perflab("export", "1", "--store", store, "-o", str(tmp_path / out)).code == 0
    assert (tmp_path / "pg.csv").read_text() == (tmp_path / "lite.csv").read_text()
    shown = json.loads(perflab("show", "1", "--json", "--store", pg_url).out)
    assert shown["user"] and shown["controller_host"]
    # the same spec run into SQLite: the same experiment, the same statistics of its
    # deterministic metrics (times, wall time and what the machine was doing aside)
    direct = tmp_path / "direct.db"
    assert perflab("run", str(spec(tmp_path, "same", tag=7)), "--store", str(direct)).code == 0
    listed = [
        [{**e, "created_at": 0} for e in json.loads(perflab("ls", "--json", "--store", s).out)]
        for s in (pg_url, str(direct))
    ]
    assert listed[0] == listed[1] and len(listed[0]) == 1
    compared = [
        json.loads(perflab("compare", "1", "--json", "--metric", "tag", "--metric", "n",
                           "--metric", "run", "--store", store).out)
        for store in (pg_url, str(direct))
    ]  # fmt: skip
    for key in ("experiment", "metrics", "comparisons", "summaries", "failed_runs"):
        assert compared[0][key] == compared[1][key], key


def test_two_controllers_run_into_one_store_at_once(pg_url, tmp_path, monkeypatch):
    """Two perflab processes (two people's experiments) write into one store at the same
    time: both finish, every run is there once, in its own experiment, with its own values;
    `perflab ls` says who ran what."""
    procs = [
        perflab_process("run", str(spec(tmp_path / n, n, tag=t, reps=3)), "--store", pg_url,
                        "--no-compare")
        for n, t in (("first", 1), ("second", 2))
    ]  # fmt: skip
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    ids = dict(rows(pg_url, "SELECT name, id FROM experiments"))
    assert sorted(ids) == ["first", "second"]
    check_runs(pg_url, ids["first"], 1)
    check_runs(pg_url, ids["second"], 2)
    assert rows(pg_url, "SELECT count(*), count(DISTINCT id) FROM runs") == [(32, 32)]
    listed = json.loads(perflab("ls", "--json", "--store", pg_url).out)
    assert [e["runs"] for e in listed] == [{"ok": 16}, {"ok": 16}]
    assert all(e["user"] and e["controller_host"] for e in listed)
    assert "┃ by " not in perflab("ls", "--store", pg_url).out  # one user, one machine: as before
    with psycopg.connect(pg_url) as conn:  # as if the second had run on another machine
        conn.execute("UPDATE experiments SET user_name='ada', controller_host='lab-2' WHERE id=%s",
                     (ids["second"],))  # fmt: skip
    table = perflab("ls", "--store", pg_url).out  # (tests run at 200 columns)
    assert "┃ by " in table and "│ ada@lab-2 " in table, table
    monkeypatch.setenv("COLUMNS", "80")  # no room for it: `ls --json` and `show` say it
    assert "by" not in perflab("ls", "--store", pg_url).out.splitlines()[1]


def _events(folder: Path) -> list[tuple[str, int]]:
    lines = (folder / "log.txt").read_text().split("\n")
    return [(kind, int(run)) for kind, run in (line.split() for line in lines if line)]


def test_a_controller_killed_mid_run_loses_nothing_and_is_resumed(pg_url, tmp_path):
    path = spec(tmp_path, "killed", tag=5, reps=3, sleep=0.3)
    p = perflab_process("run", str(path), "--store", pg_url, "--no-compare")
    wait_for(pg_url, "SELECT status FROM runs", lambda got: ("ok",) in got)
    # its experiment is locked while it runs: another controller cannot take it over
    r = perflab("run", "--resume", "1", "--store", pg_url, "--no-compare")
    assert r.code != 0 and f"experiment 1 is being run by process {p.pid}" in r.err, r.err
    # kill -9 the runner while a run is in flight, after at least 3 runs are committed
    wait_for(
        pg_url,
        "SELECT status, pid FROM runs",
        lambda got: (
            sum(s == "ok" for s, _ in got) >= 3 and any(s == "running" and pid for s, pid in got)
        ),
    )
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    done_before = {o for (o,) in rows(pg_url, "SELECT order_index FROM runs WHERE status='ok'")}
    assert rows(pg_url, "SELECT count(*) FROM runs WHERE status='running'") == [(1,)]
    assert rows(pg_url, "SELECT status FROM experiments") == [("running",)]
    events_before = len(_events(tmp_path))

    r = perflab("run", str(path), "--store", pg_url, "--no-compare")  # same spec: continues
    assert r.code == 0, r.err
    assert "continuing unfinished experiment 1" in r.err
    assert rows(pg_url, "SELECT id, status FROM experiments") == [(1, "complete")]
    check_runs(pg_url, 1, 5)  # nothing lost
    started_after = [run - 1 for kind, run in _events(tmp_path)[events_before:] if kind == "start"]
    assert not set(started_after) & done_before  # nothing that was recorded is run again
    assert len(started_after) == 16 - len(done_before)
    assert rows(pg_url, "SELECT max(attempts) FROM runs") == [(2,)]  # the run in flight, redone


def test_a_server_gone_mid_run_stops_it_in_one_line_and_resume_finishes_it(tmp_path):
    with start_postgres() as pg:  # its own server: this test crashes it
        url = pg.new_database()
        path = spec(tmp_path, "gone", tag=4, reps=2, sleep=0.2)
        p = perflab_process("run", str(path), "--store", url, "--no-compare")
        wait_for(url, "SELECT status FROM runs", lambda got: sum(s == "ok" for (s,) in got) >= 2)
        pg.crash()
        _out, err = p.communicate(timeout=60)
        assert p.returncode == 2, err
        last = err.splitlines()[-1]
        assert (
            last.startswith(f"perflab: error: store {url}: cannot save run ")
            and (
                ": the connection to the server was lost (consuming input failed: server closed the "
                "connection unexpectedly)"
            )
            in last
        ), err
        assert "`perflab run --resume 1` finishes the experiment" in last, err
        assert "Traceback" not in err
        pg.restart()
        [listed] = json.loads(perflab("ls", "--json", "--store", url).out)  # not "running"
        assert listed["status"] == "stopped" and "its runner is gone" in listed["reason"], listed
        saved = rows(url, "SELECT count(*) FROM runs WHERE status='ok'")[0][0]
        assert saved >= 2  # what was committed before the crash is there
        r = perflab("run", str(path), "--store", url, "--no-compare")
        assert r.code == 0, r.err
        assert f"{saved} of 12 runs already done" in r.err
        check_runs(url, 1, 4)


def test_a_postgres_store_estimates_a_plan_and_gives_a_models_platform(pg_url, tmp_path):
    """`run --dry-run` estimates a plan from the earlier runs in PostgreSQL, and a probe
    stored there is a platform of the model (`model --from-store URL`), as from a file."""
    from perflab.platform.stored import observation_from_store

    s = spec(tmp_path, "estimated", tag=3)
    assert perflab("run", str(s), "--store", pg_url).code == 0
    dry = perflab("run", str(s), "--store", pg_url, "--dry-run")
    assert dry.code == 0, dry.err
    assert "estimated duration:" in dry.out and "1 earlier experiment" in dry.out
    for probe, extra in (
        ("cpu", ["--duration", "0.05"]),
        ("memmove", ["--case", "small_tlbmiss", "--duration", "0.02"]),
    ):
        r = perflab("probe", probe, "--repeat", "2", "--store", pg_url, *extra)
        assert r.code == 0, r.err
    o = observation_from_store(
        pg_url, cpu="cpu_iter_per_sec", memmove="memmove_mib_per_sec", memmove_unit="MiB/s",
        rate=None, length_bytes=172,
    )  # fmt: skip
    assert o.cpu > 0 and o.memmove > 0 and o.platform
