"""Running the real CLI in-process (argv + writers) or as a subprocess."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from perflab.cli import main

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
