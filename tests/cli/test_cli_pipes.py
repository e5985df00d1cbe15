"""A reader that goes away (`perflab compare ID | head -1`): perflab ends quietly — no
traceback, no "BrokenPipeError", nothing on stderr — with the status of a program SIGPIPE
ended (141), through real pipes and the real `perflab` process."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest
from cli_helpers import import_mglru, perflab
from perflab.cli import EXIT_BROKEN_PIPE

#: Commands that print to stdout; {db} is the store.
COMMANDS = [
    ["compare", "1"],
    ["compare", "1", "--json"],
    ["compare", "1", "--format", "markdown"],
    ["ls"],
    ["show", "1"],
    ["show", "1", "--runs"],
    ["show", "1", "--run", "1"],
    ["report", "1", "--json"],
    ["report", "1", "-o", "-"],
    ["export", "1"],
]


#: Commands whose output is smaller than a pipe's buffer (64 KiB) even from the big store:
#: they may finish writing before the reader goes away (then exit 0). Every command, these
#: too, is held to exit 141 by test_a_reader_gone_before_the_first_write.
SMALL_OUTPUTS = (["ls"], ["show", "1"], ["show", "1", "--run", "1"])


def _import(folder, cells: int):
    """An import of ``cells`` cells × 2 variants × 3 runs."""
    rng = random.Random(1)
    lines = ["variant,cell,ops_per_sec,p99_latency_ms"]
    for cell in range(cells):
        for variant, scale in (("baseline", 1.0), ("mglru", 1.1)):
            for _ in range(3):
                ops = 50000 * scale * rng.uniform(0.98, 1.02)
                lines.append(f"{variant},{cell},{ops:.2f},{rng.uniform(2, 3):.4f}")
    csv = folder / "big.csv"
    csv.write_text("\n".join(lines) + "\n")
    db = folder / "big.db"
    r = perflab(
        "import",
        str(csv),
        "--store",
        str(db),
        "--variant",
        "variant",
        "--param",
        "cell",
        "--metric",
        "ops_per_sec:higher",
        "--metric",
        "p99_latency_ms:lower",
        "--baseline",
        "baseline",
    )
    assert r.code == 0, r.err
    return db


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """An import large enough that every other command's output overflows a pipe's buffer
    (64 KiB): 400 cells (Markdown's comparison: 125 KB, `show --runs`: 260 KB)."""
    return _import(tmp_path_factory.mktemp("pipes"), 400)


@pytest.fixture(scope="module")
def report_store(tmp_path_factory):
    """For the report's commands, whose output is far larger per cell and whose cost grows
    with the cells: 20 cells (the JSON report: 190 KB, the HTML report: 1.8 MB)."""
    return _import(tmp_path_factory.mktemp("pipes-report"), 20)


@pytest.fixture(scope="module")
def mglru_store(tmp_path_factory):
    return import_mglru(tmp_path_factory.mktemp("mglru") / "m.db")


def _env() -> dict[str, str]:
    # stdout buffered, as for anyone who runs perflab: with PYTHONUNBUFFERED, a write the
    # closing pipe cuts short returns its partial count and Python drops the rest silently
    # (exit 0, also quiet, but not the status under test)
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONUNBUFFERED", None)
    return env


def _spawn(argv: list[str], db, stdout) -> subprocess.Popen:
    env = _env()
    return subprocess.Popen(
        [sys.executable, "-m", "perflab", *argv, "--store", str(db)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
    )


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_reading_one_line_then_closing_the_pipe(argv, big_store, report_store):
    p = _spawn(argv, report_store if argv[0] == "report" else big_store, subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()  # as `head -1` does
    err = p.stderr.read()
    code = p.wait(timeout=120)
    assert first.strip()
    assert err == b"", err.decode(errors="replace")
    # every output here is larger than the pipe's buffer, except the small ones: those may
    # finish first
    assert code == EXIT_BROKEN_PIPE or (argv in SMALL_OUTPUTS and code == 0), code


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_reader_gone_before_the_first_write(argv, mglru_store):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the very first write fails
    try:
        p = _spawn(argv, mglru_store, write_end)
    finally:
        os.close(write_end)
    assert p.stderr is not None
    err = p.stderr.read()
    assert p.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert err == b"", err.decode(errors="replace")


def test_help_into_a_closed_pipe():
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "perflab", "compare", "--help"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=_env(),
        )
    finally:
        os.close(write_end)
    assert p.stderr is not None
    err = p.stderr.read()
    assert p.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert err == b"", err.decode(errors="replace")


def test_fail_if_worse_is_not_read_as_a_pass_when_the_pipe_closes(mglru_store):
    """A cut output is not success: under `set -o pipefail` the check stays failed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = _spawn(["compare", "1", "--fail-if-worse", "5"], mglru_store, write_end)
    finally:
        os.close(write_end)
    assert p.wait(timeout=120) != 0


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "1", "--format", "csv"],
        ["compare", "1", "--fail-if-worse", "0"],
        ["compare", "7"],  # no such experiment: exit 2 and one line on stderr
        ["show", "1", "--runs"],
        ["ls"],
    ],
    ids=" ".join,
)
def test_the_program_ends_with_the_commands_output_code_and_exit_handlers(
    argv, big_store, tmp_path
):
    """The `perflab` program ends a read-only command without the interpreter's teardown
    (`perflab.cli.console`): its output, all of it (here 100+ KB into a file), its exit
    code and stderr are those of the command run in-process, and exit handlers still run."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('exit handler ran\\n'))\n"
        f"sys.argv = ['perflab', *{argv + ['--store', str(big_store)]!r}]\n"
        "from perflab.cli import console\nconsole()\n"
    )
    out = tmp_path / "out.txt"
    with open(out, "wb") as f:
        p = subprocess.run(
            [sys.executable, "-c", code], stdout=f, stderr=subprocess.PIPE, env=_env(), timeout=120
        )
    want = perflab(*argv, "--store", str(big_store))
    assert p.returncode == want.code
    assert out.read_text() == want.out
    assert len(want.out) > 10_000 or argv[0] == "ls" or (want.code == 2 and want.err)
    assert p.stderr.decode() == want.err + "exit handler ran\n"
