"""Running the real CLI in-process (argv + writers) or as a subprocess."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from perflab.cli import main
from proc_helpers import wait_until

REPO = Path(__file__).resolve().parents[1]


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def perflab(*argv: str) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return CliResult(code, out.getvalue(), err.getvalue())


def perflab_process(*argv: str, **kw) -> subprocess.Popen:
    env = kw.pop("env", None) or {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "perflab", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kw,
    )


class Perflab:
    """A perflab process whose output is read as it comes (its progress lines)."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None) -> None:
        self.proc = perflab_process(*argv, env=env)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(s, into), daemon=True)
            for s, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def said(self, text: str, timeout: float = 60.0) -> str:
        """The first line of its stderr holding ``text`` (waited for, bounded)."""

        def found() -> str | None:
            if self.proc.poll() is not None and not any(text in x for x in self.err):
                for t in self._readers:
                    t.join(5)
                if not any(text in x for x in self.err):
                    raise AssertionError(f"perflab exited without saying {text!r}: {self.stderr}")
            return next((x for x in self.err if text in x), None)

        return wait_until(found, timeout)

    def finish(self, timeout: float = 120.0) -> int:
        """Its exit status, once it has exited; never a traceback (labgrid's gRPC layer
        included: it logs through asyncio when misused)."""
        code = self.proc.wait(timeout)
        for t in self._readers:
            t.join(10)
        assert "Traceback" not in self.stderr and "ERROR:" not in self.stderr, self.stderr
        return code

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()


def write_spec(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def import_mglru(db: Path, *metrics: str) -> Path:
    """The MGLRU memcached runs (`testdata.MGLRU_RUNS`) imported into a new store at ``db``
    with these ``--metric`` specs (default: the throughput and the p99 latency)."""
    from testdata import MGLRU_RUNS, mglru_import

    metrics = metrics or ("ops_per_sec:higher", "p99_latency_ms:lower")
    r = perflab("import", str(MGLRU_RUNS), "--store", str(db), *mglru_import(*metrics))
    assert r.code == 0, r.err
    return db


def one_error(r, tmp_path: Path | None = None) -> str:
    """The single stderr line of a failed command (asserting exit 2, no traceback)."""
    assert r.code == 2, r
    assert "Traceback" not in r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab: error: "), r.err
    return lines[0]


def mglru_store(folder: Path) -> tuple[Path, int]:
    """A store in ``folder`` holding the MGLRU runs, imported by the CLI; (path, experiment id)."""
    from testdata import MGLRU_RUNS, mglru_import

    db = folder / "p.db"
    metrics = mglru_import("ops_per_sec:higher", "p99_latency_ms:lower")
    r = perflab("import", str(MGLRU_RUNS), "--store", str(db), *metrics)
    assert r.code == 0, r.err
    return db, int(r.out.strip().splitlines()[-1])


def runs_seen(db: Path) -> list[tuple[str, str | None]]:
    """(status, device) of every run of the store at ``db`` as another process sees it
    while a perflab writes it: read-only (it never makes the store), [] before it exists."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            return [(s, d) for s, d in c.execute("SELECT status, device FROM runs")]
    except sqlite3.Error:  # not made yet
        return []
