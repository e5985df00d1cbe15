"""`perflab --help` stays light: building the parser (every command module is imported for
it) loads none of the heavy libraries — they come with the command that uses them. Checked
by what is imported, not by a clock (these machines are noisy); the time itself is measured
by benchmarks/harness_overhead."""

from __future__ import annotations

import json
import subprocess
import sys

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
    "perflab.stats",
    "perflab.spec.schema",
]


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"import sys, json\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
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
        "assert all(c.replace('import_csv', 'import') in text for c in COMMANDS), text"
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
