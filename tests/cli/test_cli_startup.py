"""`perflab --help` stays light: building the parser (every command module is imported for
it) loads none of the heavy libraries — they come with the command that uses them. Checked
by what is imported, not by a clock (these machines are noisy); the time itself is measured
by benchmarks/harness_overhead."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import import_mglru

HEAVY = [
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "rich",
    "pydantic",
    "sqlite3",
    "importlib.metadata",
    "perflab._native",
    "perflab.store.db",
    "perflab.workloads.kv",
    "perflab.spec.schema",
]
#: Of the statistics, the parser may load only the package's face (it imports its modules
#: on first use) and the options' choices (a leaf it lists in --help).
LIGHT_STATS = ("perflab.stats", "perflab.stats.options")


def _loaded_after(code: str) -> list[str]:
    """The heavy modules loaded by ``code``, and every module of the statistics but its
    light ones."""
    listed = (
        f"[m for m in {HEAVY!r} if m in sys.modules] + sorted(m for m in sys.modules if "
        f"m.startswith('perflab.stats') and m not in {LIGHT_STATS!r})"
    )
    probe = f"import sys, json\n{code}\nprint(json.dumps({listed}))"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_building_the_parser_imports_nothing_heavy():
    assert _loaded_after("from perflab.cli import build_parser\nbuild_parser()") == []


def test_help_imports_nothing_heavy_and_lists_every_command():
    code = (
        "import io, contextlib\nfrom perflab.cli import main, COMMANDS\nout = io.StringIO()\n"
        "assert main(['--help'], stdout=out, stderr=io.StringIO()) == 0\n"
        "text = out.getvalue()\n"
        "assert all(c.replace('import_csv', 'import').replace('store_copy', 'store') in text for c in COMMANDS), text"
    )
    assert _loaded_after(code) == []


def test_version_is_read_when_asked():
    p = subprocess.run(
        [sys.executable, "-m", "perflab", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (
        p.returncode == 0 and p.stdout.startswith("perflab ") and p.stdout.split()[1][0].isdigit()
    )
    import perflab

    assert perflab.__version__ == p.stdout.split()[1]


#: A `perflab` program that, as it exits, writes what numpy's OpenBLAS was told
#: (OPENBLAS_NUM_THREADS) and the process's threads then (the store's reading thread is
#: over by then: only the main thread and OpenBLAS's workers can be left).
_PROGRAM = """\
import atexit, os, sys
def said():
    threads = open("/proc/self/status").read().split("Threads:")[1].split()[0]
    sys.stderr.write(f"blas={os.environ.get('OPENBLAS_NUM_THREADS')} threads={threads}"
                     f" numpy={'numpy' in sys.modules}\\n")
atexit.register(said)
sys.argv = ["perflab", *sys.argv[1:]]
from perflab.cli import console
console()
"""


def _said(tmp_path, *argv: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    p = subprocess.run(
        [sys.executable, "-c", _PROGRAM, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=base | env,
        cwd=tmp_path,
    )
    return p.stderr.splitlines()[-1]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return import_mglru(tmp_path_factory.mktemp("blas") / "m.db")


def test_a_reading_command_runs_numpy_without_blas_workers(tmp_path, store):
    """OpenBLAS, loaded with numpy, starts a worker per CPU that spins for work a
    comparison never gives it, beside the store's read (`perflab.cli.console`). (On one
    CPU it starts none whatever it is told: this machine's CI has two.)"""
    assert _said(tmp_path, "compare", "1", "--store", str(store)) == ("blas=1 threads=1 numpy=True")
    # the user's own choice is kept
    said = _said(tmp_path, "compare", "1", "--store", str(store), OPENBLAS_NUM_THREADS="2")
    assert said.startswith("blas=2 ")


def test_a_command_that_starts_processes_leaves_their_environment_alone(tmp_path):
    """`run` starts the user's commands: they inherit this process's environment, and
    OpenBLAS's setting must not reach (and change) the benchmark."""
    assert _said(tmp_path, "run", "no-such-spec.toml").startswith("blas=None ")
