"""The git commands `perflab bisect` runs on ``--repo``, and nothing else: ``rev-parse``
(the two ends, to full commit ids), ``merge-base --is-ancestor`` (good comes before bad),
``status`` (a work tree with uncommitted changes is refused) and ``log`` (the
first-parent commits between them, with their subjects). Each runs as an
argument list — no shell — with ``--end-of-options`` before the user's revision, so that a
revision can never be read as an option; the commit ids it returns are 40 (or 64) hex
digits, checked, and only they reach the experiment's commands as ``{commit}``."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import InputError

#: A full commit id (SHA-1, or SHA-256 in a repository that uses it).
_COMMIT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: Longest time a git command may take (a cold cache on a large repository).
_GIT_TIMEOUT = 120.0


@dataclass(frozen=True)
class Commit:
    """A commit of the bisected range: its full id and the first line of its message."""

    id: str
    subject: str = ""

    @property
    def short(self) -> str:
        return self.id[:12]


def git(repo: Path, *args: str) -> str:
    """``git -C REPO ARGS`` (no pager, no shell): its stdout; InputError with git's own
    message when it fails."""
    try:
        done = subprocess.run(
            ["git", "--no-pager", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise InputError("git is not installed (perflab bisect reads the range with git)") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git {args[0]} in {repo} took over {_GIT_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        raise InputError(f"git {args[0]} in {repo}: {said}")
    return done.stdout


def repository(path: str | Path | None) -> Path:
    """The repository folder (``--repo``, default: the current one), checked to be in a
    git work tree or a bare repository."""
    repo = Path(path or ".").expanduser().resolve()
    if not repo.is_dir():
        raise InputError(f"--repo {path}: no such folder")
    git(repo, "rev-parse", "--git-dir")
    return repo


def check_clean(repo: Path) -> None:
    """InputError when ``repo``'s work tree has uncommitted changes to tracked files: a
    build that reads the work tree would measure them instead of the commits (a bare
    repository has none)."""
    if git(repo, "rev-parse", "--is-bare-repository").strip() == "true":
        return
    changed = git(repo, "status", "--porcelain", "--untracked-files=no").splitlines()
    if changed:
        raise InputError(
            f"--repo {repo}: the work tree has uncommitted changes ({len(changed)} file"
            f"{'s' if len(changed) != 1 else ''}, e.g. {changed[0][3:]}): commit or stash "
            "them, so that every step measures a commit and nothing else"
        )


def resolve(repo: Path, rev: str, which: str) -> str:
    """``rev`` (a branch, tag, ``HEAD~3``, an abbreviated id) as its full commit id."""
    if not rev or rev.startswith("-") or "\n" in rev or "\x00" in rev:
        raise InputError(f"--{which} {rev!r}: not a revision")
    try:
        out = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except InputError:
        raise InputError(f"--{which} {rev!r}: no such commit in {repo}") from None
    commit = out.strip()
    if not _COMMIT_ID.fullmatch(commit):
        raise InputError(f"--{which} {rev!r}: git answered {commit!r}, not a commit id")
    return commit


def first_parent_range(repo: Path, good: str, bad: str) -> list[Commit]:
    """The commits after ``good`` up to ``bad`` along bad's first parents, oldest first
    (``git rev-list --first-parent --ancestry-path good..bad``); the last one is ``bad``."""
    if good == bad:
        raise InputError(f"--good and --bad are the same commit ({good[:12]}): nothing to bisect")
    try:
        git(repo, "merge-base", "--is-ancestor", good, bad)
    except InputError:
        raise InputError(
            f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}: bisect looks for the "
            "first bad commit after a good one"
        ) from None
    out = git(
        repo,
        "log",
        "--first-parent",
        "--ancestry-path",
        "--format=%H%x00%s",
        "--reverse",
        f"{good}..{bad}",
    )
    commits = []
    for line in out.splitlines():
        commit, _, subject = line.partition("\x00")
        if not _COMMIT_ID.fullmatch(commit):
            raise InputError(f"git log in {repo}: unexpected line {line[:80]!r}")
        commits.append(Commit(commit, subject))
    if not commits or commits[-1].id != bad:
        raise InputError(f"no first-parent path from {good[:12]} to {bad[:12]} in {repo}")
    return commits


def subject(repo: Path, commit: str) -> str:
    """The first line of ``commit``'s message (a full commit id from `resolve`)."""
    return git(repo, "log", "-1", "--format=%s", commit, "--").strip()
