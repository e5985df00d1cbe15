"""A PostgreSQL store (`--store postgresql://…`) against a real server on loopback (pg.py):
the Database API does on it what it does on SQLite, with the same schema and migrations;
store arguments that look like URLs are PostgreSQL stores or one-line errors;
`perflab store copy` moves experiments both ways and loses nothing.

The runs of real experiments on it (concurrent writers, a controller killed and resumed,
the commands' outputs against SQLite's) are in test_store_postgres_runs.py."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import subprocess
import sys

import psycopg
import pytest
from cli_helpers import perflab
from perflab.errors import StoreError
from perflab.store import Database, MetricDef, NewRun
from perflab.store.schema import SCHEMA_VERSION, expected_columns

pytestmark = [pytest.mark.server]

METRICS = [MetricDef("t", "s", "lower"), MetricDef("u", "", "higher")]
TIMES = {"created_at", "finished_at", "started_at", "ended_at"}


def _new_runs(n: int, seed: int, *, planned: bool = False) -> list[NewRun]:
    """Runs of every status (``planned``: all pending), warm-ups among them, some without a
    metric, cells and variants in a shuffled order (so first appearances are not sorted ones)."""
    rng = random.Random(seed)
    cells = [f"n={c}" for c in rng.sample(range(40), 7)]
    out = []
    for i in range(n):
        cell = rng.choice(cells)
        status = "pending" if planned else rng.choice(["ok"] * 6 + ["failed", "timeout", "pending"])
        metrics = {"t": rng.lognormvariate(0, 1), "u": rng.uniform(-5, 5)}
        if i % 7 == 0:
            del metrics["u"]
        out.append(
            NewRun(
                order_index=i, block=i // 10, cell_key=cell, cell={"n": cell[2:]},
                variant=rng.choice(["b", "a", "Zeta", "é"]), repetition=i // 10,
                warmup=i % 11 == 0, status=status,
                metrics=None if status == "pending" else metrics,
            )
        )  # fmt: skip
    return out


def exercise(s: Database) -> dict[str, object]:
    """Every writing method of the Database, then what the store reads back (times left out)."""
    eid = s.create_experiment(
        name="api", description="d", source="run", baseline="b", metrics=METRICS,
        settings={"seed": 1}, runs=_new_runs(30, 1, planned=True)[:20], spec_sha256="abc",
    )  # fmt: skip
    big = s.create_experiment(
        name="big", description="", source="import", baseline="b", metrics=METRICS,
        settings={}, runs=_new_runs(2000, 2), status="complete",
    )  # fmt: skip
    s.append_runs(eid, _new_runs(30, 1, planned=True)[20:])
    s.update_settings(eid, adaptive={"blocks": 2}, seed=2)
    for k, r in enumerate(s.runs(eid, ["pending"])[:8]):
        s.start_run(r.id, "h1")
        s.set_run_process(r.id, 4242, "99")
        arts = {"stdout:work": f"run {k}".encode() * 50, "stderr:work": b""}
        s.finish_run(r.id, ["ok", "failed", "timeout"][k % 3], f"r{k}" if k % 3 else None,
                     {"t": k / 3, "u": -k}, arts, eid, "h1")  # fmt: skip
    pending = s.runs(eid, ["pending"])
    s.start_run(pending[0].id, "h2")
    s.reset_run(pending[0].id)
    s.mark_run_failed(pending[1].id, "disk full")
    s.put_environment(eid, "h1", {"cpu": "x"}, {"proc/cpuinfo": b"old"})
    s.put_environment(eid, "h1", {"cpu": "y"}, {"proc/cpuinfo": b"new"})
    s.put_environment(eid, "H0", {"cpu": "z"}, {})
    s.put_artifact(eid, "snapshot:001", b"\x00\xff" * 1000)
    s.stop_experiment(eid, "host h1 unreachable")
    found = s.resumable("abc")
    return {
        "dump": dump(s),
        "resumable": found and found.id == eid,
        "stop_reason": s.stop_reason(eid),
        "claims": [s.claim(eid, 1, "h"), s.claim(eid, 1, "h")],
        "prefixed": {len(v) for v in s.runs_with_artifact(eid, "stdout:").values()},
        "last": s.experiment("last").name,
        "by_name": s.experiment("api").id == eid,
        "missing artifact": s.artifact(big, "nothing"),
    }


def dump(s: Database) -> list[dict[str, object]]:
    """Everything a store holds, without ids (runs by their place in the plan) and times
    (whether each is set): equal for two stores that hold the same experiments."""
    out = []
    for e, counts in sorted(s.experiments(), key=lambda ec: ec[0].id):
        runs = s.runs(e.id)
        place = {r.id: r.order_index for r in runs}
        values, blocks = s.measured_values(e.id)
        cells, overview_counts = s.runs_overview(e.id)
        out.append(
            {
                "experiment": _plain(e, "id", "runner_pid", "runner_host"),
                "counts": counts,
                "status_counts": list(s.status_counts(e.id).items()),
                "metric_defs": s.metric_defs(e.id),
                "runs": [_plain(r, "id") for r in runs],
                "metrics": sorted((place[r], n, v) for r, n, v in s.metrics(e.id)),
                "values": [(k, values[k], blocks[k]) for k in values],
                "overview": (cells, list(overview_counts.items())),
                "environments": s.environments(e.id),
                "artifacts": {
                    str(order): [
                        (name, size, s.artifact(e.id, name, run_id))
                        for name, size in s.artifact_names(e.id, run_id)
                    ]
                    for run_id, order in [(None, None), *place.items()]
                },
            }
        )
    return out


def _plain(row: object, *left_out: str) -> dict[str, object]:
    d = dataclasses.asdict(row)  # type: ignore[call-overload]
    return {k: (v is not None if k in TIMES else v) for k, v in d.items() if k not in left_out}


def test_the_store_api_does_on_postgres_what_it_does_on_sqlite(pg_url, tmp_path):
    with Database(pg_url) as pg, Database(tmp_path / "p.db") as lite:
        assert type(pg.backend).__name__ == "PostgresBackend"
        got, want = exercise(pg), exercise(lite)
    assert got == want
    experiment = got["dump"][0]["experiment"]  # type: ignore[index]
    assert experiment["user"] and experiment["controller_host"]
    assert want["claims"] == [None, None] and want["resumable"] and want["prefixed"] == {1}


def test_its_schema_is_sqlites_and_each_open_checks_it(pg_url):
    with Database(pg_url):
        pass
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        ).fetchall()
        version = conn.execute("SELECT value FROM meta").fetchall()
        conn.execute("ALTER TABLE runs DROP COLUMN pid_start")
    have: dict[str, set[str]] = {}
    for table, column in rows:
        have.setdefault(table, set()).add(column)
    assert have == {t: set(c) for t, c in expected_columns().items()}
    assert version == [(str(SCHEMA_VERSION),)]
    with pytest.raises(StoreError, match=r"is damaged: table runs lacks column\(s\) pid_start$"):
        Database(pg_url, write=False)


def _downgrade(execute) -> None:
    """Make a store of this version one of version 1 (as an older perflab made it)."""
    for column in ("user_name", "controller_host", "version", "source_commit", "source_repo"):
        execute(f"ALTER TABLE experiments DROP COLUMN {column}")
    execute("ALTER TABLE runs DROP COLUMN device")
    execute("UPDATE meta SET value='1' WHERE key='schema_version'")


def _one_experiment(where) -> int:
    with Database(where) as s:
        return s.create_experiment(
            name="old", description="", source="import", baseline="b", metrics=METRICS,
            settings={}, runs=_new_runs(10, 3), status="complete",
        )  # fmt: skip


def test_an_older_store_is_read_as_it_is_and_migrated_by_a_writer(pg_url, tmp_path):
    lite = tmp_path / "p.db"
    for where in (lite, pg_url):
        _one_experiment(where)
        if where == lite:
            db = sqlite3.connect(lite)
            _downgrade(db.execute)
            db.commit()
            db.close()
        else:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                _downgrade(conn.execute)
        before = lite.read_bytes()
        ls = perflab("ls", "--json", "--store", str(where))
        assert ls.code == 0, ls.err
        assert [(e["name"], e["user"]) for e in json.loads(ls.out)] == [("old", None)]
        assert lite.read_bytes() == before  # a reading command migrates nothing
        _one_experiment(where)  # a writer migrates: version 4, the old rows without a user
        with Database(where, write=False) as s:
            users = [(e.name, e.user is not None) for e, _ in s.experiments()]
        assert users == [("old", True), ("old", False)]


def test_a_url_store_argument_is_postgres_or_one_line_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFLAB_STORE", raising=False)
    closed = "postgresql://perflab:secret@127.0.0.1:1/db"
    cases = [
        ("http://example.com/x.db", ("store http://example.com/x.db: unknown kind of store "
         "'http://' (a store is a SQLite file path or postgresql://USER@HOST[:PORT]/DATABASE)")),
        ("sqlite://x.db", "unknown kind of store 'sqlite://'"),
        ("postgresql://u@h:99999/db", "store postgresql://u@h:99999/db: port out of range"),
        (closed, "cannot reach store postgresql://perflab:***@127.0.0.1:1/db: connection refused"),
    ]  # fmt: skip
    for store, message in cases:
        for argv in (["ls"], ["show", "1"], ["compare", "1"], ["store", "copy", store, "x.db"]):
            r = perflab(*argv, *(["--store", store] if argv[0] != "store" else []))
            assert r.code == 2 and r.out == "", (argv, r)
            assert r.err.count("\n") == 1 and message in r.err, (argv, r.err)
            assert "secret" not in r.err
    monkeypatch.setenv("PERFLAB_STORE", closed)  # the default store when --store is not given
    r = perflab("ls")
    assert r.code == 2 and "cannot reach store postgresql://perflab:***@" in r.err
    assert list(tmp_path.iterdir()) == []  # no ./postgresql:/… folders, no x.db


def test_a_database_without_a_store_or_with_someone_elses(postgres, pg_url, tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("variant,ops\n" + "".join(f"{v},{n}\n" for v in "ab" for n in (10, 11, 12)))
    r = perflab("ls", "--store", pg_url)
    assert r.code == 2 and r.err == (
        f"perflab: error: no store at {pg_url}: database {pg_url.rsplit('/', 1)[1]} holds no "
        "perflab tables (run an experiment or import first, or pass --store)\n"
    )
    r = perflab("ls", "--store", postgres.url("nope"))
    assert r.code == 2 and 'database "nope" does not exist' in r.err
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname='public'"
        ).fetchone() == (0,)
        conn.execute("CREATE TABLE people (name TEXT)")
    for argv in (["ls"], ["import", str(csv), "--variant", "variant", "--metric", "ops:higher",
                          "--baseline", "a"]):  # fmt: skip
        r = perflab(*argv, "--store", pg_url)
        assert r.code == 2 and r.err.endswith(
            "is not a perflab store (a PostgreSQL database without perflab's tables)\n"
        ), r.err


def test_the_runner_lock_is_held_by_a_live_connection_on_any_host(pg_url, monkeypatch):
    monkeypatch.setattr("perflab.store.postgres_backend.LOCK_WAIT_S", 0.2)
    eid = _one_experiment(pg_url)
    with Database(pg_url) as first:
        assert first.claim(eid, 111, "host-a") is None
        with Database(pg_url) as second:
            assert second.claim(eid, 222, "host-b") == (111, "host-a")
            first.release(eid)
            assert second.claim(eid, 222, "host-b") is None
            assert first.claim(eid, 111, "host-a") == (222, "host-b")
            assert second.claim(eid, 222, "host-b") is None  # its own, again
        # the second's connection ended (a controller killed): the server frees its lock
        assert first.claim(eid, 111, "host-a") is None


WRITER = """
import sys
from perflab.store import MetricDef, NewRun, Database
url, who = sys.argv[1], int(sys.argv[2])
with Database(url) as s:
    for e in range(4):
        runs = [NewRun(i, 0, "c", {}, "v", i) for i in range(15)]
        eid = s.create_experiment(name=f"w{who}-{e}", description="", source="run", baseline="v",
                                  metrics=[MetricDef("x", "", "higher")], settings={}, runs=runs)
        for r in s.runs(eid):
            s.start_run(r.id, "h")
            s.finish_run(r.id, "ok", None, {"x": who * 1000 + e * 100 + r.order_index},
                         {"out": f"{who}/{e}/{r.order_index}".encode()}, eid, "h")
"""


def test_processes_writing_at_once_from_an_empty_database_lose_and_mix_nothing(pg_url):
    """Four processes make the schema at once (one does), then each its experiments: ids
    never shared, every run with its own values and artifacts."""
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, pg_url, str(w)], stderr=subprocess.PIPE)
        for w in range(1, 5)
    ]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read() if p.stderr else ""
    with Database(pg_url, write=False) as s:
        experiments = s.experiments()
        assert len(experiments) == 16 and len({e.id for e, _ in experiments}) == 16
        for e, counts in experiments:
            who, n = (int(x) for x in e.name[1:].split("-"))
            assert counts == {"ok": 15}
            runs = {r.id: r.order_index for r in s.runs(e.id)}
            assert sorted((runs[r], v) for r, _, v in s.metrics(e.id)) == [
                (i, who * 1000 + n * 100 + i) for i in range(15)
            ]
            for run_id, order in runs.items():
                assert s.artifact(e.id, "out", run_id) == f"{who}/{n}/{order}".encode()


def test_store_copy_both_ways_keeps_everything(pg_url, tmp_path, postgres):
    first = tmp_path / "first.db"
    with Database(first) as s:
        exercise(s)
    _one_experiment(first)
    r = perflab("store", "copy", str(first), pg_url)
    assert r.code == 0, r.err
    assert r.out == f"copied 3 experiments into {pg_url}: 1 as 1, 2 as 2, 3 as 3\n"
    lines = r.err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("perflab: [1/3] experiment 1 → 1: 30 runs, ")
    back = tmp_path / "back" / "again.db"
    assert perflab("store", "copy", pg_url, str(back)).code == 0
    with Database(first, write=False) as a, Database(pg_url, write=False) as b, Database(back) as c:
        assert dump(a) == dump(b) == dump(c)
    # chosen experiments (by name, by id; each once), new ids after the ones there
    r = perflab("store", "copy", pg_url, str(back), "old", "1", "old")
    assert r.code == 0 and r.out.endswith(": 3 as 4, 1 as 5\n"), r
    with Database(back, write=False) as c:
        assert [e.name for e, _ in c.experiments()][:2] == ["api", "old"]


def test_store_copy_errors_are_one_line_and_leave_the_destination_as_it_was(pg_url, tmp_path):
    src = tmp_path / "src.db"
    _one_experiment(src)
    r = perflab("store", "copy", str(src), str(tmp_path / "new.db"), "nope")
    assert (
        r.code == 2
        and r.err == f"perflab: error: no experiment 'nope' in {src} (see `perflab ls`)\n"
    )
    assert not (tmp_path / "new.db").exists()
    r = perflab("store", "copy", str(src), str(src))
    assert r.code == 2 and r.err.endswith("cannot copy experiments into their own store\n")
    r = perflab("store", "copy", str(tmp_path / "none.db"), pg_url)
    assert r.code == 2 and "no store at" in r.err
    with psycopg.connect(pg_url) as conn:  # a full experiment or none: the copy is one transaction
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname='public'"
        ).fetchone() == (0,)
    assert perflab("store", "copy", str(src), pg_url).code == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # the experiment's row is written, then its runs fail: the whole copy is undone
        conn.execute("ALTER TABLE runs ADD CONSTRAINT few CHECK (order_index < 5) NOT VALID")
    r = perflab("store", "copy", str(src), pg_url)
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err == (
        f"perflab: error: store {pg_url}: cannot copy experiment 1 of {src}: new row for "
        'relation "runs" violates check constraint "few"\n'
    )
    with Database(pg_url, write=False) as s:
        assert [e.id for e, _ in s.experiments()] == [1]


def test_a_password_stays_out_of_every_message(postgres, pg_url, tmp_path):
    nope = postgres.url("nope").replace("perflab@", "perflab:hunter2@")
    for r in (perflab("ls", "--store", nope), perflab("store", "copy", nope, "x.db")):
        assert r.code == 2 and "hunter2" not in r.err and "perflab:***@" in r.err, r.err
    url = pg_url.replace("perflab@", "perflab:hunter2@") + "?sslmode=disable"  # trusted: unused
    _one_experiment(url)
    r = perflab("store", "copy", url, str(tmp_path / "x.db"))
    assert r.code == 0 and "hunter2" not in r.out + r.err
    assert r.out == f"copied 1 experiment into {tmp_path / 'x.db'}: 1 as 1\n"
    r = perflab("store", "copy", str(tmp_path / "x.db"), url)
    assert r.out.endswith(
        f"into {pg_url.replace('perflab@', 'perflab:***@')}?sslmode=disable: 1 as 2\n"
    )
