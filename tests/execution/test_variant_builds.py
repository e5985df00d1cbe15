"""The builds of an experiment's variants (`perflab.execution.variant_build.VariantBuilds`)
asked for from several threads, as a pool's devices ask: each variant is built once, and a
variant's build never waits for another variant's — two devices whose runs need different
variants build them side by side. The builds are real commands on this machine."""

from __future__ import annotations

import threading
from pathlib import Path

from perflab.execution.command import StepOutput, run_command
from perflab.execution.variant_build import VariantBuilds
from perflab.hosts.local import LocalHost
from perflab.hosts.step import StepRequest, output_files
from perflab.spec.load import parse_spec

#: Each build marks that it started, then waits (up to 20 s) for the other variant's to
#: have started too, and says whether it saw it.
BUILD = (
    "touch {here}/started-{variant}; n=0; "
    "while [ ! -e {here}/started-{other} ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done; "
    "[ -e {here}/started-{other} ] && echo saw-{other} >> {here}/log "
    "|| echo waited-for-{other} >> {here}/log"
)


class Experiment:
    """What a build needs from its experiment (the runner's part of it): real steps run
    here, from ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.stop = threading.Event()

    def request(self, name: str, command: str, folder: Path) -> StepRequest:
        out, err = output_files(folder, name)
        return StepRequest(command, self.folder, out, err, stop=self.stop)

    def step(self, name: str, request: StepRequest) -> StepOutput:
        return run_command(LocalHost(), name, request)

    def experiment_values(self) -> dict[str, object]:
        return {"experiment": 1}


def _spec(here: Path):
    variants = "".join(
        f'[[variant]]\nname = "{name}"\non = "dut"\nkernel = "k-{name}"\n'
        f'build = "{BUILD}"\nparams = {{ other = "{other}" }}\n'
        for name, other in (("a", "b"), ("b", "a"))
    )
    return parse_spec(
        f'name = "builds"\nbaseline = "a"\n[params]\nhere = "{here}"\n'
        '[hosts.dut]\nssh = "root@127.0.0.1:2"\n'
        f'{variants}[[phase]]\nname = "p"\non = "dut"\ncommand = "true"\n'
        '[[metric]]\nname = "wall_time"\nphase = "p"\nbetter = "lower"\n',
        here / "spec.toml",
    )


def test_two_variants_build_side_by_side_and_each_once(tmp_path):
    spec = _spec(tmp_path)
    builds = VariantBuilds(spec.model, Experiment(tmp_path))
    results: dict[str, object] = {}

    def need(name: str) -> None:  # a device whose next run is of variant `name`
        variant = next(v for v in spec.model.variant if v.name == name)
        results[threading.current_thread().name] = builds.ensure(variant, tmp_path)

    threads = [
        threading.Thread(target=need, args=(name,), name=f"{name}{k}")
        for k in range(2)
        for name in ("a", "b")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted((tmp_path / "log").read_text().split()) == ["saw-a", "saw-b"]  # once each
    assert all(r is not None and r.failure is None for r in results.values()), results
