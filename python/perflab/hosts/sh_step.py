"""The portable measurement path: a step on a host where ``perflab-exec`` cannot run
(another CPU architecture, a userland it cannot load on), measured and stopped by a
POSIX ``sh`` script instead.

Why a shell script and not cross-built shims: a router's userland is busybox on MIPS,
ARM or PowerPC, big- or little-endian, musl or an old glibc, and Rust's standard library
for most of those targets cannot be had here; ``sh`` with ``date``, ``kill`` and
``/proc`` is on every one of them. What it measures, and how:

- wall time: ``date +%s%N`` read just before the command starts and just after it is
  reaped (nanoseconds; the start of one ``date`` is inside the figure); where ``date``
  has no ``%N``, ``/proc/uptime`` (10 ms); where neither, the controller's clock around
  the SSH session (``wall_source`` says which);
- user and system CPU: the shell's ``times`` before and after (the command and every
  descendant it waited for, as wait4 counts them; the clock tick's resolution, 10 ms);
- max RSS: not measured (no wait4 for a shell): the metric is left out, never zero;
- cleanup: the command starts in a session of its own (``setsid``) with a marker
  variable, ``PERFLAB_STEP=TOKEN``, in its environment; every process that carries the
  marker (a daemon that detached and changed its session included) is the step's, found
  with one ``grep -l -z`` over ``/proc/*/environ``. On a timeout, a stop or perflab's end
  (the session's stdin, which perflab holds open, reaches its end) they get SIGTERM, the
  grace period, then SIGKILL. A step that leaves processes reports it and holds them
  until its scope ends, as the native shim does. Without ``/proc`` (NetBSD) only the
  step's process group is stopped.

The script writes one report line to the session's stdout (`parse_sh_report`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The report line's first word.
REPORT_TAG = b"perflab-sh"

#: ``sh -c SCRIPT perflab-step DIR GRACE_DS TOKEN PROGRAM ARGS...``: DIR the step's
#: scratch folder (created; ``pid``, ``out``, ``err`` in it), GRACE_DS the grace period in
#: tenths of a second, TOKEN the step's marker.
STEP_SCRIPT = r"""
d=$1 g=$2 tok=$3; shift 3
mkdir -p "$d" || exit 125
echo $$ > "$d/pid"
stopped=
trap 'stopped=1' TERM INT HUP
members() {
  for f in $(grep -l -z -x -F "PERFLAB_STEP=$tok" /proc/[0-9]*/environ 2>/dev/null); do
    f=${f#/proc/}; echo "${f%/environ}"
  done
}
pause() { sleep 0.1 2>/dev/null || sleep 1; }
stop_all() {
  kill -TERM -- -"$cp" 2>/dev/null; kill -TERM $(members) "$cp" 2>/dev/null
  n=0
  while [ "$n" -lt "$g" ] && { kill -0 "$cp" 2>/dev/null || [ -n "$(members)" ]; }; do
    pause; n=$((n + 1))
  done
  kill -KILL -- -"$cp" 2>/dev/null; kill -KILL $(members) "$cp" 2>/dev/null
  wait "$cp" 2>/dev/null
}
exec 5<&0
( while read -r _; do :; done <&5; kill -TERM $$ 2>/dev/null ) &
w=$!
S=; command -v setsid >/dev/null 2>&1 && S=setsid
times > "$d/t0"
a0=$(date +%s%N 2>/dev/null); u0=x; read -r u0 _ < /proc/uptime 2>/dev/null
PERFLAB_STEP=$tok $S "$@" > "$d/out" 2> "$d/err" < /dev/null &
cp=$!
s=143; [ -n "$stopped" ] || { wait "$cp"; s=$?; }
a1=$(date +%s%N 2>/dev/null); u1=x; read -r u1 _ < /proc/uptime 2>/dev/null
times > "$d/t1"
if [ -n "$stopped" ]; then stop_all; kill "$w" 2>/dev/null; exit 143; fi
l=0; [ -n "$(members)" ] && l=1
echo "perflab-sh ${a0:-x} $u0 ${a1:-x} $u1 $s $l $S" $(cat "$d/t0") "|" $(cat "$d/t1")
while [ "$l" = 1 ] && [ -z "$stopped" ] && [ -n "$(members)" ]; do sleep 1 & wait $!; done
[ "$l" = 1 ] && stop_all
kill "$w" 2>/dev/null
exit 0
"""

_TIMES = re.compile(rb"(\d+)m\s*([\d.]+)s")


@dataclass(frozen=True)
class ShReport:
    """What the script reports; ``wall_s`` None when the host's clock gave nothing usable."""

    wall_s: float | None
    wall_source: str  # "date +%s%N", "/proc/uptime" or "" (none)
    user_s: float
    system_s: float
    wait_status: int
    lingering: bool
    own_session: bool  # the command got a session of its own (setsid was there)

    def measured_by(self) -> str:
        """How the step was measured, for its record."""
        clock = self.wall_source or "the controller's clock"
        session = "own session" if self.own_session else "no setsid: shared session"
        return f"sh ({clock}, times; {session}; max RSS not measured)"


def parse_sh_report(line: bytes) -> ShReport | None:
    """The script's report line, or None when it is not one (a lost session)."""
    head, sep, t1 = line.strip().partition(b"|")
    words = head.split()
    if not sep or len(words) < 7 or words[0] != REPORT_TAG:
        return None
    a0, u0, a1, u1, status, lingering = words[1:7]
    try:
        code = int(status)
    except ValueError:
        return None
    own_session = len(words) > 7 and words[7] == b"setsid"
    before, after = _TIMES.findall(b" ".join(words[7:])), _TIMES.findall(t1)
    user = system = 0.0
    if len(before) >= 4 and len(after) >= 4:
        user = max(0.0, _seconds(after[2]) - _seconds(before[2]))
        system = max(0.0, _seconds(after[3]) - _seconds(before[3]))
    wall, source = _wall(a0, a1, u0, u1)
    return ShReport(
        wall_s=wall,
        wall_source=source,
        user_s=user,
        system_s=system,
        wait_status=_wait_status(code),
        lingering=lingering == b"1",
        own_session=own_session,
    )


def _seconds(parts: tuple[bytes, bytes]) -> float:
    return int(parts[0]) * 60 + float(parts[1])


def _wall(a0: bytes, a1: bytes, u0: bytes, u1: bytes) -> tuple[float | None, str]:
    if a0.isdigit() and a1.isdigit() and len(a0) > 12:  # %N expanded: nanoseconds
        return max(0.0, (int(a1) - int(a0)) / 1e9), "date +%s%N"
    try:
        return max(0.0, float(u1) - float(u0)), "/proc/uptime"
    except ValueError:
        return None, ""


def _wait_status(code: int) -> int:
    """The shell's ``$?`` of ``wait`` as a wait status (128+N: killed by signal N)."""
    if 128 < code < 128 + 65:
        return code - 128
    return (code & 0xFF) << 8
