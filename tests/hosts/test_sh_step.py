"""The portable measurement path's report (`perflab.hosts.sh_step`): what each shell prints
for ``times`` and ``date``, read into the figures a step records; and the script itself
run by the shells a device may have (dash, busybox ash), without SSH."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from perflab.hosts.sh_step import STEP_SCRIPT, parse_sh_report

# `times` as each shell prints it: before the command, then after it
TIMES = {
    "dash": (
        "0m0.000000s 0m0.000000s 0m0.000000s 0m0.000000s",
        "0m0.000000s 0m0.000000s 0m1.250000s 0m0.030000s",
    ),
    "busybox": ("0m0.000s 0m0.000s 0m0.010s 0m0.000s", "0m0.000s 0m0.000s 1m2.260s 0m0.040s"),
    "mksh": ("0m0.00s     0m0.00s 0m 0.01s 0m 0.00s", "0m0.00s 0m0.00s 0m 3.01s 0m 1.00s"),
    "bash": ("0m0.001s 0m0.000s 0m0.002s 0m0.000s", "0m0.001s 0m0.000s 0m0.502s 0m0.100s"),
}


@pytest.mark.parametrize("shell", sorted(TIMES))
def test_cpu_times_are_the_childrens_difference_in_every_shells_format(shell):
    before, after = TIMES[shell]
    line = f"perflab-sh 1000000000000 5.00 1500000000000 5.50 0 0 setsid {before} | {after}"
    r = parse_sh_report(line.encode())
    assert r is not None and r.own_session
    expected = {
        "dash": (1.25, 0.03),
        "busybox": (62.25, 0.04),
        "bash": (0.5, 0.1),
        "mksh": (3.0, 1.0),
    }[shell]
    assert (round(r.user_s, 6), round(r.system_s, 6)) == expected
    assert r.wall_s == 500.0 and r.wall_source == "date +%s%N"


def test_the_clock_falls_back_to_uptime_then_to_none():
    no_ns = parse_sh_report(b"perflab-sh 1700000000N 10.25 1700000001N 12.75 0 0 | ")
    assert no_ns is not None and no_ns.wall_s == 2.5 and no_ns.wall_source == "/proc/uptime"
    neither = parse_sh_report(b"perflab-sh x x x x 0 0 | ")
    assert neither is not None and neither.wall_s is None and neither.wall_source == ""
    assert "the controller's clock" in neither.measured_by()
    assert not neither.own_session and "no setsid" in neither.measured_by()


def test_exit_status_and_signals_become_wait_statuses():
    def status(code: int) -> int:
        r = parse_sh_report(f"perflab-sh x x x x {code} 0 | ".encode())
        assert r is not None
        return r.wait_status

    assert os.waitstatus_to_exitcode(status(0)) == 0
    assert os.waitstatus_to_exitcode(status(3)) == 3
    assert os.waitstatus_to_exitcode(status(137)) == -9  # the shell's 128 + SIGKILL


@pytest.mark.parametrize(
    "line", [b"", b"garbage", b"perflab-sh 1 2 3", b"perflab-sh a b c d e f |"]
)
def test_anything_else_is_not_a_report(line):
    assert parse_sh_report(line) is None


def _shells() -> list[str]:
    found = ["/bin/sh"]  # dash on Debian
    busybox = shutil.which("busybox")
    if busybox is None:
        raise AssertionError("busybox is missing: scripts/setup installs it")
    return [*found, busybox]


@pytest.mark.slow
@pytest.mark.parametrize("shell", _shells(), ids=lambda s: Path(s).name)
def test_the_script_measures_holds_and_stops_in_each_shell(shell, tmp_path):
    argv = [shell] if Path(shell).name != "busybox" else [shell, "sh"]
    token = f"t{os.getpid()}{time.monotonic_ns()}"

    def step(*command: str) -> tuple[subprocess.Popen[bytes], bytes]:
        folder = tmp_path / f"s{time.monotonic_ns()}"
        p = subprocess.Popen(
            [*argv, "-c", STEP_SCRIPT, "perflab-step", str(folder), "3", token, *command],
            stdin=subprocess.PIPE,  # held open, as perflab holds the session's input
            stdout=subprocess.PIPE,
        )
        assert p.stdout is not None
        return p, p.stdout.readline()

    def marked() -> list[str]:
        out = subprocess.run(
            ["grep", "-l", "-z", "-x", "-F", f"PERFLAB_STEP={token}"]
            + [str(p / "environ") for p in Path("/proc").iterdir() if p.name.isdigit()],
            capture_output=True,
            text=True,
        ).stdout
        return out.split()

    p, line = step("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; exit 4")
    r = parse_sh_report(line)
    assert r is not None and os.waitstatus_to_exitcode(r.wait_status) == 4 and not r.lingering
    assert r.user_s + r.system_s > 0 and r.wall_s is not None and r.wall_s > 0
    assert p.wait(10) == 0
    # a detached daemon is the step's: reported, held, and stopped when perflab goes away
    p, line = step("sh", "-c", "setsid sh -c 'sleep 36.5 &'; echo started")
    r = parse_sh_report(line)
    assert r is not None and r.lingering and marked()
    assert p.stdin is not None
    p.stdin.close()  # perflab's end: the session's input reaches its end
    assert p.wait(10) == 0
    deadline = time.monotonic() + 10
    while marked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked()
