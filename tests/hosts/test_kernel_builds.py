"""Kernels built from source for the lab's router (scripts/lab/kernel, docs/lab.md): a
real kernel repository — Debian's linux-source-6.1 as commit 0, commits on top — each
commit cross-built with Debian's mipsel compiler and ccache by a variant's ``build``, the
router booted by perflab into the release that commit names and verified by ``uname -r``;
the commit that does not compile and the one whose kernel panics at boot fail their runs
with the build's last lines and the console's panic line (what a bisect skips them by);
perflab killed or stopped mid-build leaves no make and no compiler, and a resumed
experiment does not build again what was built.

The first build of the source is the slow part (6–9 min on two cores with a cold ccache;
ccache and the builds are kept in the lab's cache, so a later session's is a minute)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import perflab
from lab import CACHE, ROOT, lab_fixture, ssh_options, stop_perflab, vm_argv  # noqa: F401
from perflab.store import Database
from servers import free_port

pytestmark = pytest.mark.slow

KERNEL = ROOT / "scripts" / "lab" / "kernel"
#: A cold build of the source on a loaded 2-core machine, with room to spare.
BUILD_S = 1800.0


def _make_repo(root: Path) -> dict[str, str]:
    """A kernel repository of five commits: 1 does not build (2 undoes it), 3 panics at
    boot (4 undoes it), 5 is the regression. Returns the ids `repo` printed, and ``repo``."""
    done = subprocess.run(
        [str(KERNEL), "repo", str(root / "linux.git"), "--commits", "5", "--broken", "1"]
        + ["--panic", "3", "--regression", "5"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PERFLAB_LAB_CACHE": str(CACHE)},
    )
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.split())


def _spec(lab, port: int, ids: dict[str, str], variants: dict[str, str], head: str = "") -> str:
    """An experiment on the router: each variant boots the kernel built from its commit."""
    boot = " ".join(vm_argv("router", "{kernel}", ssh_port=port))
    opts = ", ".join(f'"{o}"' for o in ssh_options(lab, "router"))
    blocks = "".join(
        f'[[variant]]\nname = "{name}"\non = "router"\nkernel = "*-g{{commit}}"\n'
        f'build = "{KERNEL} build --repo {{repo}} --commit {{commit}}"\n'
        f'params = {{ commit = "{ids[key]}", repo = "{ids["repo"]}" }}\n'
        for name, key in variants.items()
    )
    return (
        f'name = "kernels"\nbaseline = "{next(iter(variants))}"\nrepetitions = 2\n'
        f'build_timeout = "{BUILD_S:.0f}s"\n{head}\n'
        f'[hosts.router]\nssh = "root@127.0.0.1:{port}"\nidentity = "{lab.identity}"\n'
        f'options = [{opts}]\nboot_timeout = "90s"\n[hosts.router.control]\nboot = "{boot}"\n'
        f"{blocks}"
        '[[phase]]\nname = "p"\non = "router"\ncommand = "uname -r"\n'
        '[[metric]]\nname = "wall_time"\nphase = "p"\nbetter = "lower"\n'
    )


def _builders() -> list[int]:
    """PIDs of the router kernel's builders: make in the lab's kernel build folder, the
    mipsel cross compiler (ccache, gcc, cc1, as, ld)."""
    work = str(CACHE / "kernel" / "work").encode()
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes()
        except OSError:
            continue
        if b"mipsel-linux-gnu" in cmd or (cmd.startswith(b"make") and work in cmd):
            found.append(int(p.name))
    return found


def _until(predicate, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting until {what}")


@pytest.fixture(scope="module")
def kernel_repo(lab, tmp_path_factory) -> dict[str, str]:
    return _make_repo(tmp_path_factory.mktemp("kernel"))


def test_a_commit_is_built_booted_and_verified_and_broken_ones_fail_with_reasons(
    lab, kernel_repo, tmp_path
):
    ids = kernel_repo
    port = free_port()
    spec = tmp_path / "kernels.toml"
    variants = {"good": "good", "broken": "broken", "panics": "panic"}
    spec.write_text(_spec(lab, port, ids, variants, head="max_failures = 0"))
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 1, r.err  # the broken and panicking variants' runs failed
    with Database(db) as s:
        runs = s.runs(1)
        art = {
            run.id: {n: s.artifact(1, n, run.id) for n, _ in s.artifact_names(1, run.id)}
            for run in runs
        }
    by = {v: [run for run in runs if run.variant == v] for v in variants}
    release = (CACHE / "kernel" / "builds" / ids["good"] / "release").read_text().strip()
    assert release.startswith("6.1.") and release.endswith(f"-g{ids['good']}")
    for run in by["good"]:  # booted into the kernel built from its commit, verified
        assert run.status == "ok", run.reason
        assert art[run.id]["kernel"].decode().split("\t")[1] == release
        assert art[run.id]["stdout:phase:p"].decode().strip() == release
    first_good = min(by["good"], key=lambda run: run.order_index)
    said = art[first_good.id]["stderr:build"]  # the build's output, kept with the first run
    assert b"built in" in said or b"built before" in said, said
    for run in by["broken"]:  # the compiler's own words, not a guess
        assert run.status == "failed"
        assert run.reason.startswith("build: exited with status 1: "), run.reason
        assert "vmscan.c" in run.reason and "error" in run.reason, run.reason
    for run in by["panics"]:
        assert run.status == "failed"
        assert "the kernel panicked: Kernel panic - not syncing: boot self-test failed" in (
            run.reason
        ), run.reason
    assert (CACHE / "kernel" / "builds" / f"{ids['broken']}.failed" / "build.log").is_file()
    assert not _builders()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_perflab_stopped_mid_build_leaves_no_compiler_and_resume_builds_once(
    lab, kernel_repo, tmp_path, sig
):
    """A commit not built yet (the regression, commit 5; SIGINT: commit 4): perflab stopped
    while its build compiles leaves no make or compiler running; --resume finishes the
    build where make left it and does not build again what is kept."""
    ids = dict(kernel_repo)
    key = "regression" if sig == signal.SIGKILL else "fixed"
    if key == "fixed":  # commit 4: the panic undone
        out = subprocess.run(
            ["git", "--git-dir", ids["repo"], "rev-parse", "main~1"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        ids["fixed"] = out.stdout.strip()
    kept = CACHE / "kernel" / "builds" / ids[key]
    shutil.rmtree(kept, ignore_errors=True)  # built by an earlier session: build it again
    port = free_port()
    spec = tmp_path / "stop.toml"
    spec.write_text(_spec(lab, port, ids, {"good": "good", "new": key}))
    db = tmp_path / "p.db"
    cli = [sys.executable, "-m", "perflab", "run", str(spec), "--store", str(db), "--no-compare"]
    proc = subprocess.Popen(cli, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _until(lambda: bool(_builders()) or proc.poll() is not None, "the build compiles", BUILD_S)
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
    finally:
        stop_perflab(proc, sig)
    _until(lambda: not _builders(), "no make or compiler is left", 60)
    assert not kept.exists()  # an interrupted build keeps nothing
    with Database(db) as s:  # the run whose build was cut short is pending again, none failed
        statuses = [run.status for run in s.runs(1)]
        assert set(statuses) <= {"pending", "running", "ok"} and "ok" not in [
            run.status for run in s.runs(1) if run.variant == "new"
        ], statuses
    r = perflab("run", "--resume", "1", "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    assert (kept / "vmlinux").is_file()
    with Database(db) as s:
        runs = s.runs(1)
        assert [run.status for run in runs] == ["ok"] * 4
        first = min((run for run in runs if run.variant == "new"), key=lambda r: r.order_index)
        said = s.artifact(1, "stderr:build", first.id).decode()
    assert "built in" in said, said
    # once kept, a build is not run again: the next experiment's build says so
    r = perflab("run", str(spec), "--store", str(db), "--new", "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        runs = [run for run in s.runs(2) if run.variant == "new"]
        first = min(runs, key=lambda run: run.order_index)
        assert b"built before, kept in" in s.artifact(2, "stderr:build", first.id)
    assert not _builders()
