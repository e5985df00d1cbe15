"""A kind of phase is a plug-in: one defined here, outside perflab, registered through the
public registry (`perflab.spec.phase_kinds.register`), is validated where a phase has its
key, checked at file:line, named in the messages listing the kinds, and runs a real
experiment through `perflab run` — with no edit of perflab's code."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Hashable, Set
from typing import Annotated, Any

import pytest
from cli_helpers import perflab, write_spec
from perflab.execution.failure_policy import Failure
from perflab.execution.metrics import PhaseOutput
from perflab.execution.phase_profile import start_profile
from perflab.spec.metric_names import NameSet
from perflab.spec.phase_kinds import PhaseKind, kinds, register, unregister
from perflab.spec.template import render_value
from pydantic import BaseModel, ConfigDict, Field


class Sleep(BaseModel):
    """``[phase.sleep]``: how long, in seconds, or ``"{param}"`` naming a number."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    seconds: (
        Annotated[float, Field(gt=0, le=10)]
        | Annotated[str, Field(pattern=r"^\{[A-Za-z_][A-Za-z0-9_]*\}$")]
    )


class SleepKind(PhaseKind):
    """A phase that sleeps in perflab's process: its schema, rules and metric names (what
    the spec layer asks of a kind) and its execution and profiling (what a run asks of its
    runner) in one class, its own runner."""

    key = "sleep"
    schema = Sleep
    here_only = True  # it runs inside perflab: `on` another host is an error
    renders = True  # "{param}" is checked as every cell and variant renders it

    def __init__(self) -> None:
        self.runner = self

    # -- the spec layer: rules and metric names
    def check_rendered(self, spec: Any, i: int, phase: Any, values: dict[str, Any]) -> Hashable:
        seconds = render_value(phase.kind_value.seconds, values)
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise spec.error(
                ("phase", i, "sleep", "seconds"),
                f"sleep phase '{phase.name}': seconds = {seconds!r} is not a number",
            )
        return None

    def metric_names(self, phase: Any, modes: Set[Hashable]) -> NameSet | None:
        return NameSet(f"sleep phase '{phase.name}'", frozenset({"slept_s", "asked_s"}))

    # -- the run layer: execution and profiling (`perflab.execution.phase_kinds.PhaseRunner`)
    def execute(self, ex: Any, name: str, phase: Any) -> None:
        start_profile(ex, name, phase, self)  # as `profile_plan` says: a note, once
        seconds = float(render_value(phase.kind_value.seconds, ex.values))
        limit = ex.budget(phase.timeout)
        t0 = time.monotonic()
        stopped = ex.runner.stop.wait(seconds if limit is None else min(seconds, limit))
        slept = time.monotonic() - t0
        if stopped or (limit is not None and limit < seconds):
            status = "interrupted" if stopped else "timeout"
            ex.failure = (status, Failure(name, status, f"{name}: {status}"))
            return
        ex.commands.append({"step": name, "host": None, "command": f"sleep {seconds:g}", "env": {}})
        if phase.measure:
            ex.outputs[phase.name] = PhaseOutput("", "", {}, {"slept_s": slept, "asked_s": seconds})

    def profile_plan(self, phase: Any, mode: str) -> str:
        return f"profile: phase {phase.name} sleeps in perflab's process: not profiled"


SPEC = """\
name = "naps"
baseline = "short"
repetitions = 3

[[variant]]
name = "short"
params = { nap = 0.01 }
[[variant]]
name = "long"
params = { nap = 0.05 }

[[phase]]
name = "setup"
measure = false
command = "true"

[[phase]]
name = "nap"
[phase.sleep]
seconds = "{nap}"

[[metric]]
name = "slept_s"
better = "lower"
unit = "s"
"""


@pytest.fixture
def sleep_kind():
    kind = register(SleepKind())
    yield kind
    unregister(kind.key)


def error_of(tmp_path, text: str) -> str:
    spec = write_spec(tmp_path, text)
    r = perflab("run", str(spec), "--dry-run", "--store", str(tmp_path / "db"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r
    return r.err.strip().replace(str(spec), "SPEC")


def test_a_registered_kind_runs_an_experiment(tmp_path, sleep_kind):
    assert [k.key for k in kinds()] == ["command", "kv", "probe", "sleep"]
    db = tmp_path / "p.db"
    r = perflab("run", str(write_spec(tmp_path, SPEC)), "--store", str(db), "--no-compare")
    assert r.code == 0, r.err
    r = perflab("export", "last", "--store", str(db), "-o", "-")
    assert r.code == 0, r.err
    rows = [row for row in csv.DictReader(io.StringIO(r.out)) if row["metric"] == "slept_s"]
    assert len(rows) == 6 and {row["status"] for row in rows} == {"ok"}
    slept = {
        v: [float(row["value"]) for row in rows if row["variant"] == v] for v in ("short", "long")
    }
    assert min(slept["short"]) >= 0.01 and min(slept["long"]) >= 0.05
    assert max(slept["short"]) < min(slept["long"])


def test_its_profiling_behaviour_is_its_own(tmp_path, sleep_kind):
    spec = write_spec(tmp_path, SPEC.replace("repetitions = 3", "repetitions = 1"))
    r = perflab("run", str(spec), "--store", str(tmp_path / "p.db"), "--no-compare", "--profile")
    assert r.code == 0, r.err
    assert r.err.count("profile: phase nap sleeps in perflab's process: not profiled") == 1


@pytest.mark.parametrize(
    "change, expected",
    [
        (  # its schema, validated where the phase is written
            ('seconds = "{nap}"', "seconds = -1"),
            "SPEC:17: phase[2].sleep.seconds: Input should be greater than 0, got -1",
        ),
        (
            ('seconds = "{nap}"', 'seconds = "{nap}"\nsecs = 1'),
            "SPEC:17: unknown key 'secs' in [[phase]] #2 'nap' sleep",
        ),
        (  # checked as each variant renders it
            ("nap = 0.05", 'nap = "long"'),
            "SPEC:17: sleep phase 'nap': seconds = 'long' is not a number",
        ),
        (  # the phase's keys name it, in the kinds' order
            ("[phase.sleep]", 'command = "true"\n[phase.sleep]'),
            "SPEC:17: phase 'nap' needs exactly one of 'command', 'kv', 'probe' or 'sleep'",
        ),
        (  # its metric names
            ('name = "slept_s"', 'name = "slept_sx"'),
            "SPEC:23: sleep phase 'nap' reports no metric 'slept_sx' (did you mean 'slept_s'?)",
        ),
        (  # the phase's common keys, as the kind says they apply
            ("[phase.sleep]", 'on = "dut"\n[phase.sleep]'),
            "SPEC:19: sleep phases run on this machine",
        ),
        (
            ("[phase.sleep]", 'parser = "hyperfine"\n[phase.sleep]'),
            "SPEC:19: a sleep phase has its own metrics; remove 'parser'",
        ),
    ],
)
def test_its_rules_give_one_line_at_file_line(tmp_path, sleep_kind, change, expected):
    text = SPEC.replace(*change) + '\n[hosts.dut]\nssh = "root@127.0.0.1"\n'
    assert error_of(tmp_path, text) == f"perflab: error: {expected}"


def test_without_it_its_key_is_unknown(tmp_path):
    assert "sleep" not in [k.key for k in kinds()]
    assert error_of(tmp_path, SPEC) == (
        "perflab: error: SPEC:17: unknown key 'sleep' in [[phase]] #2 'nap' (known keys: "
        "name, measure, command, kv, probe, cores, shell, parser, timeout, env, on, fetch, "
        "processes, profile, profile_on, counters, counters_on, monitor)"
    )


def test_a_key_is_registered_once():
    with pytest.raises(ValueError, match="taken"):
        register(SleepKind.__new__(type("Command", (SleepKind,), {"key": "command"})))
    with pytest.raises(ValueError, match="perflab's"):
        unregister("kv")
