"""A generated git repository of a small C program with a planted slowdown, and the bisect
spec that builds and times each commit: the end-to-end tests of `perflab bisect`
(tests/api/test_bisect.py) and benchmarks/bisect_trials, which runs many such trials."""

from __future__ import annotations

import subprocess
from pathlib import Path

#: Loop iterations of the good program (30–90 ms of CPU time on the machines this ran on).
WORK = 30_000_000
#: The planted commit's extra work: 8%, a regression the size users bisect
#: (benchmarks/bisect_trials). The end-to-end tests plant `TEST_SLOWDOWN` instead: on a
#: shared VM the loop's CPU time itself varies by 5–12% from run to run (65–91 ms, sd
#: 8.3%, over 90 runs here with nothing else running; the CI runner's intervals say ~12%),
#: where an 8% change can take more blocks than a step allows and a step's interval,
#: decided in 5 blocks, is ±20% wide; tests of the bisect's mechanics must not depend on
#: how quiet the machine is that day.
SLOWDOWN = 1.08
TEST_SLOWDOWN = 1.50

#: The program times its loop with clock_gettime: by default the CPU time it took
#: (CLOCK_PROCESS_CPUTIME_ID). On a shared machine (2 CPUs, other test suites running) the
#: wall clock measures the scheduler as much as the code — 16% run-to-run spread against
#: 0.9% for the CPU time, measured side by side under such load on a quiet host — and an
#: 8% change would take hundreds of runs per step. benchmarks/bisect_trials --clock monotonic
#: runs the same trials on the wall clock.
PROGRAM = """\
#include <stdio.h>
#include <time.h>
/* {note} */
#define WORK {work}UL
int main(void) {{
    struct timespec a, b;
    volatile unsigned long x = 1;
    clock_gettime({clock}, &a);
    for (unsigned long i = 0; i < WORK; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    clock_gettime({clock}, &b);
    printf("loop_ns %ld\\n", (long)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)));
    return 0;
}}
"""
CLOCKS = {"cputime": "CLOCK_PROCESS_CPUTIME_ID", "monotonic": "CLOCK_MONOTONIC"}

SPEC = """\
name = "{name}"
baseline = "build"
repetitions = {{ min = 5, max = 40, target_ci = "2%" }}
seed = {seed}

[[variant]]
name = "build"
setup = \"\"\"test -x builds/{{commit}}/prog || (mkdir -p builds/{{commit}} && \\
  git -C {{repo}} show {{commit}}:prog.c > builds/{{commit}}/prog.c && \\
  gcc -O2 -o builds/{{commit}}/prog builds/{{commit}}/prog.c)\"\"\"

[[phase]]
name = "loop"
command = "builds/{{commit}}/prog"

[[metric]]
name = "loop"
unit = "ns"
better = "lower"
regex = 'loop_ns (?P<value>[0-9]+)'
"""


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "PATH": "/usr/bin:/bin",
        "HOME": str(repo),
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def make_repo(
    root: Path,
    commits: int = 16,
    planted: int = 11,
    broken: int | None = None,
    clock: str = "cputime",
    slowdown: float = SLOWDOWN,
) -> tuple[Path, str, str, str]:
    """A repository whose commit 0 is good and commits 1..``commits`` follow it; commit
    ``planted`` multiplies the loop's work by ``slowdown``; commit ``broken`` (if any) does
    not compile (the next one fixes it). Returns (repo, good id, bad id, planted id)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    work, ids = WORK, []
    for k in range(commits + 1):
        subject = f"commit {k}: tidy up"
        if k == planted:
            work, subject = round(WORK * slowdown), f"commit {k}: more work per call"
        text = PROGRAM.format(note=f"revision {k}", work=work, clock=CLOCKS[clock])
        if k == broken:
            text, subject = text.replace("return 0;", "return 0"), f"commit {k}: typo"
        (repo / "prog.c").write_text(text)
        git(repo, "add", "prog.c")
        git(repo, "commit", "-q", "-m", subject)
        ids.append(git(repo, "rev-parse", "HEAD"))
    return repo, ids[0], ids[-1], ids[planted]


def write_spec(root: Path, name: str = "loop", seed: int = 1) -> Path:
    spec = root / "bisect.toml"
    spec.write_text(SPEC.format(name=name, seed=seed))
    return spec
