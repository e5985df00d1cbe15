"""Database faults: each is one line naming the store, exit 2, and nothing created or changed.

Real files and real CLI calls throughout. Read-only cases run the CLI in a child process
that file modes apply to (when the tests run as root: root without CAP_DAC_OVERRIDE, so
chmod binds it as it binds any owner). A full disk is a child process under RLIMIT_FSIZE,
and a 2 MiB tmpfs where this machine lets us mount one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cli_helpers import CliResult, perflab
from unprivileged import perflab_unprivileged

CSV_ROWS = "variant,ops\n" + "".join(f"{v},{n}\n" for v in "ab" for n in (10, 11, 12, 13, 14))
IMPORT = ("--variant", "variant", "--metric", "ops:higher", "--baseline", "a")
READS = [
    ("ls",),
    ("show", "last"),
    ("show", "last", "--runs"),
    ("compare", "last"),
    ("report", "last", "--json", "-o", "-"),
]


# -- helpers


def csv_file(folder: Path, text: str = CSV_ROWS, name: str = "r.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    return p


def make_store(path: Path, csv: Path) -> Path:
    """A real store holding one imported experiment (10 runs)."""
    r = perflab("import", str(csv), "--store", str(path), *IMPORT)
    assert r.code == 0, r.err
    return path


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: kind, mode, and for files size, mtime and content hash."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        if stat.S_ISDIR(st.st_mode):
            out[str(p.relative_to(folder))] = ("dir", stat.S_IMODE(st.st_mode))
        else:
            out[str(p.relative_to(folder))] = (
                "file",
                stat.S_IMODE(st.st_mode),
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(p.read_bytes()).hexdigest(),
            )
    return out


def assert_refused(r: CliResult, path: Path, *words: str) -> str:
    """Exit 2 and exactly one line on stderr, ``perflab: error: …`` naming ``path``."""
    lines = r.err.splitlines()
    assert r.code == 2, r
    assert len(lines) == 1 and lines[0].startswith("perflab: error: "), r.err
    assert str(path) in lines[0], r.err
    for w in words:
        assert w in lines[0], r.err
    assert r.out == ""
    return lines[0]


def sqlite_edit(path: Path, script: str) -> None:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.close()


# -- reading commands never write


@pytest.mark.parametrize("argv", READS, ids=" ".join)
@pytest.mark.parametrize("where", ["p.db", "no/such/folder/p.db"])
def test_reading_a_missing_store_is_one_line_and_creates_nothing(tmp_path, argv, where):
    store = tmp_path / where
    before = snapshot(tmp_path)
    r = perflab(*argv, "--store", str(store))
    assert_refused(
        r, store, f"no store at {store} (run an experiment or import first, or pass --store)"
    )
    assert snapshot(tmp_path) == before == {}


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_default_store_missing_creates_nothing(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFLAB_STORE", raising=False)
    assert_refused(perflab(*argv), Path("perflab.db"), "no store at perflab.db")
    monkeypatch.setenv("PERFLAB_STORE", str(tmp_path / "env" / "x.db"))
    assert_refused(perflab(*argv), tmp_path / "env" / "x.db", "no store at")
    assert list(tmp_path.iterdir()) == []


def test_resuming_needs_an_existing_store(tmp_path):
    store = tmp_path / "p.db"
    assert_refused(perflab("run", "--resume", "1", "--store", str(store)), store, "no store at")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name", ["p.db", "a b?c#d%20.db"]
)  # the second must be quoted in a file: URI
def test_reading_a_healthy_store_changes_nothing(tmp_path, name):
    store = make_store(tmp_path / "s" / name, csv_file(tmp_path / "in"))
    before = snapshot(store.parent)
    for argv in READS:
        r = perflab(*argv, "--store", str(store))
        assert r.code == 0, (argv, r.err)
        assert snapshot(store.parent) == before, argv  # no -wal/-shm left, same bytes and mtime
    assert '"name": "r"' in perflab("ls", "--json", "--store", str(store)).out


def test_writing_creates_the_store_and_its_missing_folders(tmp_path):
    store = tmp_path / "a" / "b" / "p.db"
    make_store(store, csv_file(tmp_path / "in"))
    assert store.is_file()
    assert json.loads(perflab("ls", "--json", "--store", str(store)).out)[0]["runs"] == {"ok": 10}


# -- the path cannot hold a store


@pytest.mark.parametrize("below", ["p.db", "sub/p.db"])
def test_store_under_a_file(tmp_path, below):
    blocker = tmp_path / "data"
    blocker.write_text("not a folder\n")
    csv = csv_file(tmp_path / "in")
    store = blocker / below
    before = snapshot(tmp_path)
    for argv in READS:
        assert_refused(
            perflab(*argv, "--store", str(store)),
            store,
            f"no store at {store} ({blocker} is a file, not a folder)",
        )
    assert_refused(
        perflab("import", str(csv), "--store", str(store), *IMPORT),
        store,
        f"cannot create store {store}: {blocker} is a file, not a folder",
    )
    assert snapshot(tmp_path) == before


def test_store_path_is_a_folder(tmp_path):
    store = tmp_path / "p.db"
    store.mkdir()
    csv = csv_file(tmp_path / "in")
    before = snapshot(tmp_path)
    for argv in [*READS, ("import", str(csv), *IMPORT)]:
        assert_refused(perflab(*argv, "--store", str(store)), store, f"store {store} is a folder")
    assert snapshot(tmp_path) == before


# -- damaged or foreign files: refused as they are, by reading and writing commands


def _truncated(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:8192])


def _short(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:50])


def _text(p: Path) -> None:
    p.write_text("run,ops\n1,2\n")


def _garbled(p: Path) -> None:
    b = p.read_bytes()
    p.write_bytes(b[:100] + b"\xff" * 3996 + b[4096:])  # page 1 (the schema) past the header


def _foreign(p: Path) -> None:
    p.unlink()
    sqlite_edit(p, "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada');")


def _foreign_meta(p: Path) -> None:
    p.unlink()
    sqlite_edit(p, "CREATE TABLE meta (k TEXT, v TEXT);")


DAMAGE = {
    "truncated": (_truncated, "is damaged: truncated to 8192 bytes of"),
    "short": (_short, "is damaged: truncated to 50 bytes, inside the SQLite header"),
    "text": (_text, "is not a perflab store (not an SQLite database)"),
    "garbled": (_garbled, "is damaged: database disk image is malformed"),
    "foreign": (_foreign, "is not a perflab store (an SQLite database without perflab's tables)"),
    "foreign meta": (_foreign_meta, "is not a perflab store"),
    "table missing": (
        lambda p: sqlite_edit(p, "DROP TABLE artifacts"),
        "is damaged: table artifacts is missing",
    ),
    "column missing": (
        lambda p: sqlite_edit(p, "ALTER TABLE runs DROP COLUMN pid_start"),
        "is damaged: table runs lacks column(s) pid_start",
    ),
    "bad version": (
        lambda p: sqlite_edit(p, "UPDATE meta SET value='one' WHERE key='schema_version'"),
        "is damaged: its schema version 'one' is not a number",
    ),
    "no version": (lambda p: sqlite_edit(p, "DELETE FROM meta"), "is not a perflab store"),
    "future": (
        lambda p: sqlite_edit(p, "UPDATE meta SET value='99' WHERE key='schema_version'"),
        "has schema 99, newer than this perflab (4) (upgrade perflab)",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_store_is_refused_and_left_as_it_is(tmp_path, damage):
    csv = csv_file(tmp_path / "in")
    store = make_store(tmp_path / "s" / "p.db", csv)
    spoil, message = DAMAGE[damage]
    spoil(store)
    before = snapshot(store.parent)
    for argv in [*READS, ("import", str(csv), *IMPORT)]:
        assert_refused(perflab(*argv, "--store", str(store)), store, f"store {store} {message}")
        assert snapshot(store.parent) == before, argv


def test_empty_file_is_an_error_to_read_and_a_new_store_to_write(tmp_path):
    store = tmp_path / "p.db"
    store.write_bytes(b"")
    before = snapshot(tmp_path)
    for argv in READS:
        assert_refused(
            perflab(*argv, "--store", str(store)), store, "is empty (0 bytes): not a perflab store"
        )
    assert snapshot(tmp_path) == before
    make_store(store, csv_file(tmp_path / "in"))
    assert perflab("show", "last", "--store", str(store)).code == 0


def test_sqlite_file_without_tables_is_an_error_to_read(tmp_path):
    store = tmp_path / "p.db"
    sqlite_edit(store, "PRAGMA user_version=7")
    before = snapshot(tmp_path)
    assert_refused(perflab("ls", "--store", str(store)), store, "an SQLite database with no tables")
    assert snapshot(tmp_path) == before


# -- read-only files and folders (a child process without root's override of file modes)


@pytest.fixture
def ro_tmp(tmp_path):
    """tmp_path, its modes made writable again afterwards (so it can be removed)."""
    yield tmp_path
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)


def test_child_really_cannot_write_read_only_files(ro_tmp):
    """Guards the tests below: the child is refused by the modes they set."""
    d = ro_tmp / "ro"
    d.mkdir()
    d.chmod(0o555)
    csv = csv_file(ro_tmp / "in")
    r = perflab_unprivileged(
        "import", str(csv), "--store", str(d / "x" / "p.db"), *IMPORT, cwd=ro_tmp
    )
    assert r.code == 2 and "Permission denied" in r.err, r.err
    assert not (d / "x").exists()


def _store_for_child(ro_tmp: Path, *, file_mode: int, folder_mode: int) -> tuple[Path, Path]:
    csv = csv_file(ro_tmp / "in")
    store = make_store(ro_tmp / "s" / "p.db", csv)
    store.chmod(file_mode)
    store.parent.chmod(folder_mode)
    return store, csv


def test_import_into_a_read_only_store_file(ro_tmp):
    store, csv = _store_for_child(ro_tmp, file_mode=0o444, folder_mode=0o777)
    before = snapshot(store.parent)
    r = perflab_unprivileged("import", str(csv), "--store", str(store), *IMPORT, cwd=ro_tmp)
    assert assert_refused(r, store).endswith(f"store {store} is read-only")
    assert snapshot(store.parent) == before


def test_import_into_a_store_in_a_read_only_folder(ro_tmp):
    store, csv = _store_for_child(ro_tmp, file_mode=0o666, folder_mode=0o555)
    before = snapshot(store.parent)
    r = perflab_unprivileged("import", str(csv), "--store", str(store), *IMPORT, cwd=ro_tmp)
    assert_refused(
        r, store, f"store {store} is read-only (its folder {store.parent} cannot be written"
    )
    assert snapshot(store.parent) == before


def test_new_store_in_a_read_only_folder(ro_tmp):
    csv = csv_file(ro_tmp / "in")
    folder = ro_tmp / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    for store, words in (
        (folder / "p.db", f"folder {folder} is read-only"),
        (folder / "sub" / "p.db", f"cannot create folder {folder / 'sub'}: Permission denied"),
    ):
        r = perflab_unprivileged("import", str(csv), "--store", str(store), *IMPORT, cwd=ro_tmp)
        assert_refused(r, store, f"cannot create store {store}: ", words)
    assert list(folder.iterdir()) == []


def test_reading_a_store_in_a_read_only_folder_works_and_creates_nothing(ro_tmp):
    """SQLite cannot make the WAL's -shm file there: the store is read as immutable."""
    store, _ = _store_for_child(ro_tmp, file_mode=0o444, folder_mode=0o555)
    before = snapshot(store.parent)
    for argv in READS:
        r = perflab_unprivileged(*argv, "--store", str(store), cwd=ro_tmp)
        assert r.code == 0 and r.err == "", (argv, r.err)
    r = perflab_unprivileged("ls", "--json", "--store", str(store), cwd=ro_tmp)
    assert json.loads(r.out)[0]["runs"] == {"ok": 10}
    assert snapshot(store.parent) == before


def test_reading_a_read_only_store_file_leaves_its_bytes(ro_tmp):
    store, _ = _store_for_child(ro_tmp, file_mode=0o444, folder_mode=0o777)
    before = snapshot(store.parent)["p.db"]
    for argv in READS:
        r = perflab_unprivileged(*argv, "--store", str(store), cwd=ro_tmp)
        assert r.code == 0 and r.err == "", (argv, r.err)
    after = snapshot(store.parent)
    assert after["p.db"] == before
    assert set(after) <= {"p.db", "p.db-wal", "p.db-shm"}  # SQLite's read-only WAL files may stay


# -- full disk mid-run

FILL = """
import hashlib, json, os, resource, signal, sys
from perflab.errors import StoreError
from perflab.store import MetricDef, NewRun, Database

path, limit, ballast = sys.argv[1], int(sys.argv[2]), sys.argv[3]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
store = Database(path)
eid = store.create_experiment(
    name="fill", description="", source="run", baseline="a", metrics=[MetricDef("ops", "", "higher")],
    settings={}, runs=[NewRun(order_index=i, block=i, cell_key="-", cell={}, variant="a", repetition=i + 1)
                       for i in range(400)])
if ballast:  # room to give back once the disk is full
    with open(ballast, "wb") as f:
        f.write(b"x" * 256 * 1024)
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
out = {"saved": {}}
for run in store.runs(eid):
    data = os.urandom(64 * 1024)
    try:
        store.start_run(run.id, "host")
        store.finish_run(run.id, "ok", None, {"ops": float(run.order_index)}, {"stdout": data}, eid, "host")
    except StoreError as e:
        out.update(error=e.one_line(), type=type(e).__name__, run_id=run.id)
        break
    out["saved"][run.id] = hashlib.sha256(data).hexdigest()
failed = next(r for r in store.runs(eid) if r.id == out["run_id"])  # reads still work
out["status_after_error"] = failed.status
for when in ("still full", "space again"):
    if when == "space again":
        if ballast:
            os.remove(ballast)
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        store.mark_run_failed(failed.id, "its results could not be saved")
        out[when] = "marked"
    except StoreError as e:
        out[when] = e.one_line()
store.close()
print(json.dumps(out))
"""

CLI_FULL = """
import io, json, resource, signal, sys
from perflab.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
out, err = io.StringIO(), io.StringIO()
code = main(sys.argv[2:], stdout=out, stderr=err)
print(json.dumps([code, out.getvalue(), err.getvalue()]))
"""

# disk I/O error: the write failed with EFBIG (RLIMIT_FSIZE); disk full: ENOSPC (a full tmpfs)
SQLITE_SAYS = {"rlimit": "disk I/O error", "tmpfs": "database or disk is full"}


@pytest.fixture(params=["rlimit", "tmpfs"])
def small_disk(request, tmp_path):
    """(folder, RLIMIT_FSIZE for the child or 0, how): a file-size limit, or a 2 MiB tmpfs."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if request.param == "rlimit":
        yield folder, 1024 * 1024, "rlimit"
        return
    m = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "perflab-full", str(folder)],
        capture_output=True,
        text=True,
    )
    if m.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({m.stderr.strip()}); the rlimit case covers a full disk"
        )
    try:
        yield folder, 0, "tmpfs"
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _child(script: str, *argv: str) -> dict | list:
    p = subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_full_disk_mid_run_is_one_line_and_keeps_every_run_saved_before(small_disk):
    folder, limit, how = small_disk
    store = folder / "p.db"
    out = _child(FILL, str(store), str(limit), str(folder / "ballast") if how == "tmpfs" else "")
    assert out["type"] == "StoreError"
    assert "\n" not in out["error"]
    assert out["error"].startswith(f"store {store}: cannot ")
    assert out["error"].endswith(
        f" run {len(out['saved']) + 1} of experiment 1: {SQLITE_SAYS[how]}"
    )
    assert 3 <= len(out["saved"]) < 400
    assert out["status_after_error"] in (
        "running",
        "pending",
    )  # the failed write left nothing of the run
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    for run_id, digest in out["saved"].items():
        status, index, value = db.execute(
            "SELECT r.status, r.order_index, m.value FROM runs r"
            " JOIN metrics m ON m.run_id = r.id WHERE r.id=?",
            (int(run_id),),
        ).fetchone()
        (blob,) = db.execute("SELECT data FROM artifacts WHERE run_id=?", (int(run_id),)).fetchone()
        assert (status, value) == ("ok", index)
        assert hashlib.sha256(zlib.decompress(blob)).hexdigest() == digest
    failed = out["run_id"]
    assert db.execute("SELECT count(*) FROM metrics WHERE run_id=?", (failed,)).fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM artifacts WHERE run_id=?", (failed,)).fetchone() == (0,)
    # marking it failed may not fit on the full disk either; then it says so, in one line
    assert out["still full"] == "marked" or (
        out["still full"].startswith(f"store {store}: cannot mark run ")
        and "\n" not in out["still full"]
    ), out["still full"]
    assert out["space again"] == "marked"  # the runner's best effort, once there is room
    assert db.execute("SELECT status, reason FROM runs WHERE id=?", (failed,)).fetchone() == (
        "failed",
        "its results could not be saved",
    )
    assert db.execute("SELECT count(*) FROM runs WHERE status='ok'").fetchone() == (
        len(out["saved"]),
    )
    db.close()


def test_full_disk_during_import_is_one_line_and_keeps_the_store(small_disk, tmp_path):
    folder, limit, how = small_disk
    store = make_store(folder / "p.db", csv_file(tmp_path / "in"))
    big = csv_file(
        tmp_path / "in",
        "variant,ops\n" + "".join(f"{'ab'[i % 2]},{i}\n" for i in range(60000)),
        "big.csv",
    )
    if limit:
        limit = store.stat().st_size + 256 * 1024
    code, out, err = _child(
        CLI_FULL, str(limit), "import", str(big), "--store", str(store), *IMPORT
    )
    r = CliResult(code, out, err)
    assert_refused(
        r, store, f"perflab: error: store {store}: cannot save experiment 'big': {SQLITE_SAYS[how]}"
    )
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert db.execute("SELECT name FROM experiments").fetchall() == [("r",)]
    assert db.execute("SELECT count(*) FROM runs").fetchone() == (10,)
    db.close()
