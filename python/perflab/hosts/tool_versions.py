"""Which tools a spec's commands run, and the version each reports.

`command_tools` finds the well-known programs (`VERSION_COMMANDS`) in shell commands;
`tool_version` asks one for its version through a `Reader` and keeps the line that
names it (None when the tool is missing, hangs or says nothing useful).

A version is asked only of a program the user named in ``tools = [...]`` or of a
well-known program a command runs by its bare name (``memcached``, ``redis-server``...):
never of another program found in a command (a user's script, a path), which could do
anything with an argument it does not expect (``ensure-kernel.sh --version`` restarted
a machine with a kernel named ``--version``).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable

from perflab.hosts.base import TOOL_TIMEOUT, Reader

#: How to ask a tool its version when ``--version`` is not the way (or prints too much).
VERSION_COMMANDS: dict[str, list[str]] = {
    "memcached": ["-V"],
    "redis-server": ["--version"],
    "redis-cli": ["--version"],
    "redis-benchmark": ["--version"],
    "memtier_benchmark": ["--version"],
    "memcaslap": ["--version"],
    "memaslap": ["--version"],
    "hyperfine": ["--version"],
    "gcc": ["--version"],
    "g++": ["--version"],
    "clang": ["--version"],
    "cc": ["--version"],
    "python3": ["--version"],
    "python": ["--version"],
    "perf": ["--version"],
    "fio": ["--version"],
    "wrk": ["-v"],
    "nginx": ["-v"],
    "java": ["-version"],
    "go": ["version"],
    "ssh": ["-V"],
    "taskset": ["--version"],
    "rustc": ["--version"],
    "cargo": ["--version"],
    "node": ["--version"],
    "iperf3": ["--version"],
    "sysbench": ["--version"],
    "stress-ng": ["--version"],
    "valkey-server": ["--version"],
    "dragonfly": ["--version"],
}


def _version_line(output: str) -> str | None:
    """The first non-empty line that names a version (has a digit), at most 200 characters."""
    for line in output.splitlines():
        line = line.strip()
        if line and re.search(r"\d", line):
            return line[:200]
    return None


def tool_version(host: Reader, tool: str, timeout: float = TOOL_TIMEOUT) -> str | None:
    """``tool``'s version line, or None when it is not installed, hangs or says nothing useful.

    ``tool`` may be a name on PATH or a path (``./memtier_benchmark/memtier_benchmark``);
    the version flag is looked up by its base name, ``--version`` otherwise.
    """
    flags = VERSION_COMMANDS.get(os.path.basename(tool), ["--version"])
    result = host.query([tool, *flags], timeout)
    if result is None:
        return None
    code, output = result
    line = _version_line(output)
    if line is None:
        return None
    # Some tools (wrk) print their version and a usage text, then exit non-zero; but a
    # non-zero exit with an error message is no version.
    if code != 0 and (
        not re.search(r"\d+\.\d+", line)
        or re.search(
            r"error|unknown|invalid|unrecognized|illegal|usage|not found", line, re.IGNORECASE
        )
    ):
        return None
    return line


#: Words after which the next word is again a command (keywords, wrappers).
_COMMAND_PREFIXES = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "do",
        "while",
        "until",
        "{",
        "!",
        "time",
        "sudo",
        "env",
        "nohup",
        "command",
        "builtin",
        "exec",
    }
)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "|&", ";;"})


def command_tools(commands: Iterable[str]) -> list[str]:
    """The well-known programs a list of shell commands runs, for `capture`'s ``tools``:
    those of `VERSION_COMMANDS`, named by their bare name (a path, ``./memcached`` or
    ``/opt/x/memcached``, may be anything: the spec's ``tools`` names it if wanted).

    The first word of every simple command (split at ``&& || ; | &``), after
    ``VAR=value`` assignments and wrappers such as ``sudo``/``env``/``time``. Order kept,
    duplicates dropped; a command that does not parse is skipped. A wrapper with options
    (``taskset -c 1 x``) yields the wrapper only.
    """
    tools: list[str] = []
    for command in commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:
            continue
        at_start = True
        for word in words:
            if word in _SEPARATORS:
                at_start = True
                continue
            if not at_start:
                continue
            if word in _COMMAND_PREFIXES or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word):
                continue
            at_start = False
            # A path, a script, a program of unknown manners, a {param} or $VAR: not run.
            if word in VERSION_COMMANDS and word not in tools:
                tools.append(word)
    return tools
