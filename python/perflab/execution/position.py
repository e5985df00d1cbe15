"""An experiment's place in a series, resolved when it starts: the spec's ``version`` (as
written, or what its command prints) and ``source`` (the commit written, or read from the
repository with ``git -C REPO rev-parse HEAD``), or what the command line gives instead
(`perflab run --version`, `perflab import --version --commit --repo`).

Only commands the user wrote run here — the spec's version command — and git, to read a
commit id. Each runs in a session of its own, with a timeout, and leaves nothing behind
(its whole process group is killed when it ends). Any failure is one line: a `SpecError`
at the spec's line, or an `InputError` naming the option.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import InputError, PerflabError
from perflab.records import Position
from perflab.spec.position import VersionCommand, check_version

if TYPE_CHECKING:
    from perflab.spec import Spec

#: How long ``git rev-parse`` may take (seconds).
GIT_TIMEOUT = 30.0
#: Output kept of a command (a version is one short line).
_MAX_OUTPUT = 64 << 10


def check_version_option(text: str, option: str = "--version") -> str:
    """``--version V``, ``--commit C``, ``--repo R`` checked (InputError, one line)."""
    try:
        return check_version(text)
    except ValueError as e:
        raise InputError(f"{option} {text[:80]!r}: {e}") from None


def resolve_position(spec: Spec, version: str | None = None) -> Position:
    """The version and source of an experiment of ``spec`` starting now: ``version`` (the
    command line's) over the spec's ``version``; the spec's ``source``, its commit read
    from the repository when not written. Runs the spec's version command only when no
    ``version`` is given."""
    m = spec.model
    folder = spec.path.parent.resolve() if spec.path else Path.cwd()
    if version is not None:
        found: str | None = check_version_option(version)
    elif isinstance(m.version, VersionCommand):
        found = _version_of(spec, m.version, folder)
    else:
        found = m.version
    if m.source is None:
        return Position(found)
    repo, commit = m.source.repo, m.source.commit
    local = folder / repo
    if commit is None:
        try:
            commit = head_commit(local)
        except PerflabError as e:
            raise spec.error(("source", "repo"), f"source.repo '{repo}': {e.message}") from None
    if "://" not in repo and local.is_dir():  # a folder here: named by its whole path
        repo = str(local.resolve())
    return Position(found, commit, repo)


def import_position(version: str | None, commit: str | None, repo: str | None) -> Position:
    """`perflab import --version V [--commit C] [--repo R]`: ``--repo`` without
    ``--commit`` (a git work tree) gives its HEAD commit."""
    if version is not None:
        check_version_option(version)
    if commit is not None:
        check_version_option(commit, "--commit")
    if repo is not None:
        check_version_option(repo, "--repo")
        if commit is None:
            try:
                commit = head_commit(Path(repo))
            except PerflabError as e:
                hint = "give --commit C with a repository that is not a folder here"
                raise InputError(f"--repo {repo}: {e.message}", hint=hint) from None
            repo = str(Path(repo).resolve())
    return Position(version, commit, repo)


def head_commit(repo: Path) -> str:
    """The commit id ``git -C REPO rev-parse HEAD`` prints; PerflabError (one line) when
    ``repo`` is not a git work tree with a commit, or git is not installed."""
    if not repo.is_dir():
        raise PerflabError("no such folder" if not repo.exists() else "not a folder")
    done = _run(["git", "-C", str(repo), "rev-parse", "--verify", "HEAD"], None, GIT_TIMEOUT)
    if isinstance(done, str):
        raise PerflabError(f"cannot run git: {done}")
    code, out, err = done
    if code != 0:
        why = _last_line(err) or f"git exited with status {code}"
        raise PerflabError(f"not a git repository with a commit ({why})")
    return out.strip()


def _version_of(spec: Spec, how: VersionCommand, folder: Path) -> str:
    """What the spec's version command prints, stripped; SpecError at its line otherwise."""

    def fail(why: str) -> PerflabError:
        return spec.error(("version", "command"), f"version command {how.command!r} {why}")

    done = _run(["/bin/sh", "-c", how.command], folder, how.timeout)
    if isinstance(done, str):
        raise fail(done)
    code, out, err = done
    if code != 0:
        said = _last_line(err) or _last_line(out)
        raise fail(f"exited with status {code}" + (f": {said}" if said else ""))
    text = out.strip()
    if not text:
        raise fail("printed nothing on stdout")
    try:
        return check_version(text)
    except ValueError as e:
        raise fail(f"printed {text[:80]!r}: {e}") from None


def _run(argv: list[str], cwd: Path | None, timeout: float) -> tuple[int, str, str] | str:
    """(exit status, stdout, stderr) of ``argv``, or why it could not run or finish (a
    text). In a session of its own; its process group is killed when it ends."""
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as e:
        return f"{e.filename or argv[0]} not found"
    except OSError as e:
        return e.strerror or str(e)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        return f"did not finish within {timeout:g} s"
    except BaseException:
        _kill_group(proc.pid)
        proc.communicate()
        raise
    _kill_group(proc.pid)  # anything it left running goes with it
    text = out[:_MAX_OUTPUT].decode("utf-8", "replace")
    return proc.returncode, text, err[:_MAX_OUTPUT].decode("utf-8", "replace")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
