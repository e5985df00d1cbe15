"""perflab's exit codes, one place for every command (docs/cli.md, "Exit codes")."""

from __future__ import annotations

import signal

EXIT_OK = 0
#: The command did what it was asked and found something to report: a failed check
#: (`compare --fail-if-worse`), runs that failed (`run`, `load`), no first bad commit
#: (`bisect`: undecided, no regression, an end failed, …).
EXIT_FAILED_CHECK = 1
EXIT_RUNS_FAILED = 1
EXIT_NOT_FOUND = 1
#: Bad input: spec, arguments, files.
EXIT_USAGE = 2
#: Ctrl-C (SIGINT), as a shell reports a program it ended (128 + 2).
EXIT_INTERRUPTED = 128 + signal.SIGINT
#: The reader of stdout went away (`perflab compare 1 | head -1`): the status of a program
#: SIGPIPE ended, as a shell reports it (128 + 13), so `set -o pipefail` still sees the cut.
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
