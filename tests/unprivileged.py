"""The CLI in a child process that file modes apply to: when the tests run as root, root
without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from the bounding set before
exec), so a read-only folder or store is read-only to it as to any user."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

from cli_helpers import CliResult

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = (
    24,
    1,
    2,
)  # <linux/prctl.h>, <linux/capability.h>
CHILD_CLI = """
import io, json, sys
from perflab.cli import main
out, err = io.StringIO(), io.StringIO()
code = main(sys.argv[1:], stdout=out, stderr=err)
print(json.dumps([code, out.getvalue(), err.getvalue()]))
"""


def _lose_root_override() -> None:
    """Runs in the child before exec: drops the capabilities that let root ignore file modes
    from the bounding set, so the exec'd process (still root, the owner) obeys them."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def perflab_unprivileged(*argv: str, cwd: Path) -> CliResult:
    """The CLI in a child process that file modes apply to (root without its override)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run(
        [sys.executable, "-c", CHILD_CLI, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        preexec_fn=_lose_root_override if os.geteuid() == 0 else None,
    )
    assert p.returncode == 0, p.stderr
    code, out, err = json.loads(p.stdout.splitlines()[-1])
    return CliResult(code, out, err)
