"""Text from programs and the store reaches the terminal escaped, never obeyed: terminal
escape sequences (CSI, OSC), other control characters, C1 controls and bidi overrides are
written visibly, and rich markup in program output stays literal. JSON and the raw
artifact for a pipe stay exact. A real experiment whose command prints such sequences,
through the real CLI (in-process, in a subprocess, and on a pseudo-terminal)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

from cli_helpers import REPO, perflab, write_spec
from perflab.report.safe_text import has_unsafe, safe_text, terminal_safe
from rich.console import Console

#: What the evil command writes to stdout: an OSC that retitles the window (ended by BEL),
#: a CSI that clears the screen, rich markup, a C1 CSI (U+009B, as UTF-8) and a bidi override.
EVIL_STDOUT = "\x1b]0;pwned\x07\x1b[2J[red]x[/red] \x9b \u202egnp.exe\n"
SHOWN_STDOUT = "\\x1b]0;pwned\\x07\\x1b[2J[red]x[/red] \\x9b \\u202egnp.exe"
SHOWN_STDERR = "\\x1b[31mboom"

SPEC = r"""
name = "evil-output"
baseline = "a"
repetitions = 1

[[variant]]
name = "a"
[[variant]]
name = "b"

[[phase]]
name = "evil"
command = "printf '\\033]0;pwned\\007\\033[2J[red]x[/red] \\302\\233 \\342\\200\\256gnp.exe\\n'; printf '\\033[31mboom\\n' >&2; exit 3"

[[metric]]
name = "wall_time"
unit = "s"
better = "lower"
"""

REASON = "phase:evil: exited with status 3: \x1b[31mboom"

#: Characters that must never reach a terminal raw from program output.
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def assert_no_raw(text: str, where: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} in {where}: {text!r}"


# ----- the function ----------------------------------------------------------------------


def test_terminal_safe_escapes_what_a_terminal_would_obey():
    assert terminal_safe("\x1b[2Jcleared") == "\\x1b[2Jcleared"
    assert (
        terminal_safe("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\")
        == "\\x1b]8;;http://evil\\x1b\\link\\x1b]8;;\\x1b\\"
    )
    assert (
        terminal_safe("title\x07 nul\x00 bs\x08 del\x7f") == "title\\x07 nul\\x00 bs\\x08 del\\x7f"
    )
    assert terminal_safe("c1 \x9b31m \x9d0;t\x9c \x85") == "c1 \\x9b31m \\x9d0;t\\x9c \\x85"
    assert (
        terminal_safe("\u202aa\u202bb\u202cc\u202dd\u202ee \u2066f\u2067g\u2068h\u2069")
        == "\\u202aa\\u202bb\\u202cc\\u202dd\\u202ee \\u2066f\\u2067g\\u2068h\\u2069"
    )
    assert terminal_safe("ok\roverwritten") == "ok\\roverwritten"
    # multi-line blocks keep their lines and tabs; one-line text escapes them too
    assert terminal_safe("a\tb\nc\n") == "a\tb\nc\n"
    assert terminal_safe("a\tb\nc", one_line=True) == "a\\tb\\nc"
    # printable text, markup characters, backslashes and other Unicode are untouched
    plain = "p99 = 1.5 ms [red]x[/red] C:\\path ✓ µs → naïve 日本"
    assert terminal_safe(plain) == plain and not has_unsafe(plain)
    assert has_unsafe("\x1b") and not has_unsafe("a\nb") and has_unsafe("a\nb", one_line=True)
    # bytes are decoded (undecodable ones become U+FFFD); None is empty
    assert terminal_safe(b"\xc2\x9b\xff\x1bok") == "\\x9b\ufffd\\x1bok"
    assert terminal_safe(None) == ""


def test_safe_text_is_printed_literally_by_rich():
    buf = __import__("io").StringIO()
    console = Console(file=buf, force_terminal=True, color_system="truecolor", width=200)
    console.print(safe_text("[red]x[/red] :smile: \x1b[2J"))
    out = buf.getvalue()
    assert "[red]x[/red] :smile: \\x1b[2J" in out
    assert "\x1b[2J" not in out and "😄" not in out


# ----- a real experiment through the CLI ---------------------------------------------------


def run_evil(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code != 2, r.err
    return db, r


def test_run_progress_and_show_escape_program_output(tmp_path):
    db, r = run_evil(tmp_path)
    # the failure reasons in the progress output (one line per run, not a terminal here)
    assert_no_raw(r.out + r.err, "perflab run")
    assert f"a #1 failed: phase:evil: exited with status 3: {SHOWN_STDERR}" in r.err, r.err

    # show --run N: each step's stdout/stderr and the reason, escaped; [red] literal
    s = perflab("show", "last", "--store", str(db), "--run", "1")
    assert s.code == 0, s.err
    assert_no_raw(s.out, "show --run")
    assert SHOWN_STDOUT in s.out, s.out
    assert f"reason: phase:evil: exited with status 3: {SHOWN_STDERR}" in s.out
    assert s.out.count(SHOWN_STDERR) == 2  # the reason and the stderr artifact

    # the experiment view (failed runs) and the table of runs
    for argv in ((), ("--runs",)):
        s = perflab("show", "last", "--store", str(db), *argv)
        assert s.code == 0, s.err
        assert_no_raw(s.out, f"show {argv}")
        assert f"exited with status 3: {SHOWN_STDERR}" in s.out

    # JSON stays exact: json.dumps escapes, a reader gets the bytes back
    doc = json.loads(perflab("show", "last", "--store", str(db), "--json").out)
    assert [run["reason"] for run in doc["runs"]] == [REASON, REASON]
    doc = json.loads(perflab("show", "last", "--store", str(db), "--run", "1", "--json").out)
    assert doc["artifacts"]["stdout:phase:evil"] == EVIL_STDOUT


def test_artifact_is_raw_for_a_pipe(tmp_path):
    db, _ = run_evil(tmp_path)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "show",
            "last",
            "--store",
            str(db),
            "--run",
            "1",
            "--artifact",
            "stdout:phase:evil",
        ],
        capture_output=True,
        timeout=60,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == EVIL_STDOUT.encode()  # byte for byte, for a file


def in_pty(argv: list[str], timeout: float = 60.0) -> tuple[int, str]:
    """Run perflab with stdin/stdout/stderr on a pseudo-terminal (200 columns); its exit
    code and everything it wrote. Reads until the terminal closes, bounded by ``timeout``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [sys.executable, "-m", "perflab", *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        else:
            proc.kill()
            raise AssertionError(f"perflab {argv} did not finish within {timeout:g} s")
        code = proc.wait(timeout=timeout)
    finally:
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_on_a_terminal_artifacts_reasons_and_progress_are_escaped(tmp_path):
    spec = write_spec(tmp_path, SPEC)
    db = tmp_path / "p.db"
    # the live progress bar (rich) prints each failure with its reason
    code, out = in_pty(["run", str(spec), "--store", str(db), "--no-compare"])
    assert code != 2, out
    assert "\x1b[31mboom" not in out and "\x07" not in out, repr(out)
    assert SHOWN_STDERR in out, repr(out)

    # show --run N and the --artifact on a terminal: shown escaped, not obeyed
    for argv in (["--run", "1"], ["--run", "1", "--artifact", "stdout:phase:evil"]):
        code, out = in_pty(["show", "last", "--store", str(db), *argv])
        assert code == 0, out
        for raw in ("\x1b]0;pwned", "\x07", "\x1b[2J", "\x1b[31mboom", "\x9b", "\u202e"):
            assert raw not in out, (argv, raw, out)
        assert SHOWN_STDOUT in out, (argv, out)
