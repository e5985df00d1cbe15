"""The scripts of benchmarks/ start: each imports what it uses (perflab's modules and the
test helpers some share) and answers --help. They are run by hand, one session at a time,
so a module they import that moved would otherwise go unnoticed until that session
(bisect_trials imported a test module that had moved to tests/api/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").iterdir())


def test_there_are_scripts():
    assert len(SCRIPTS) >= 7


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_script_starts_and_answers_help(script):
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout.lower()
