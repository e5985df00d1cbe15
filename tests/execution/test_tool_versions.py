"""Recording tool versions never runs a command the user did not write: versions are asked
only of the programs named in `tools = [...]` and of well-known programs the commands
run by name (memcached, hyperfine...), never of a user's script or an unknown program
(`ensure-kernel.sh --version` once restarted a VM with a kernel named `--version`)."""

from __future__ import annotations

import os
from collections import Counter

from cli_helpers import perflab, write_spec
from perflab.store import Database


def _recording_script(path, log) -> None:
    """A program that appends its name and arguments to ``log`` every time it runs."""
    path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> {log}\necho v=1\n')
    path.chmod(0o755)


def test_a_users_scripts_run_only_as_the_spec_says(tmp_path, monkeypatch):
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    _recording_script(bin_dir / "ensure-kernel.sh", log)  # named by its path
    _recording_script(bin_dir / "mybench", log)  # found on PATH by its name
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    spec = write_spec(
        tmp_path,
        f"""\
name = "tools"
baseline = "a"
repetitions = 2
tools = ["memcached"]
[[variant]]
name = "a"
setup = "{bin_dir}/ensure-kernel.sh {{variant}}"
[[variant]]
name = "b"
setup = "{bin_dir}/ensure-kernel.sh {{variant}}"
[[phase]]
name = "p"
command = "mybench run || hyperfine --help"
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
""",
    )
    db = tmp_path / "p.db"
    r = perflab("run", str(spec), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    with Database(db) as s:
        runs = s.runs(1)
        environments = s.environments(1)
    assert {x.status for x in runs} == {"ok"}
    per_variant = Counter(x.variant for x in runs)
    # each script ran exactly as the spec says, never with --version or anything else
    assert Counter(log.read_text().splitlines()) == Counter(
        {
            "ensure-kernel.sh a": per_variant["a"],
            "ensure-kernel.sh b": per_variant["b"],
            "mybench run": len(runs),
        }
    )
    [info] = environments.values()  # this machine only
    # the versions recorded: the spec's tools and the well-known programs of its commands
    assert list(info["tools"]) == ["memcached", "hyperfine"]
    assert info["tools"]["memcached"].startswith("memcached ")
