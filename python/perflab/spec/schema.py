"""The experiment file's schema: pydantic models, strict (unknown keys are errors).

Field docs here are the spec reference; README's "Spec reference" mirrors them.
Cross-field rules that need the whole document (baseline exists, templates name
known parameters, ...) live in `validate.py` so each error gets its own location.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    create_model,
    model_validator,
)

from perflab.spec.host_tables import HostSpec
from perflab.spec.locate import Path as KeyPath
from perflab.spec.position import SourceSpec, VersionCommand, VersionText
from perflab.spec.types import (
    Bool,
    Command,
    Cores,
    Duration,
    DurationOrZero,
    Env,
    Label,
    OverheadCommand,
    RealNumber,
    Scalar,
    Short,
    Strict,
    Text,
    WholeNumber,
)


def parse_percent(value: object) -> float:
    """A fraction from a percentage string: "1%" → 0.01 (a bare number would be ambiguous)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", value)
        if m and 0 < float(m.group(1)) < 100:
            return float(m.group(1)) / 100
    raise ValueError(
        f'expected a percentage between 0% and 100% such as "1%" or "0.5%", got {value!r}'
    )


Percent = Annotated[float, BeforeValidator(parse_percent)]


def parse_share(value: object) -> float:
    """A share of runs: "50%" → 0.5; "100%" allowed (never stops)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", value)
        if m and 0 < float(m.group(1)) <= 100:
            return float(m.group(1)) / 100
    raise ValueError(f'expected a percentage above 0% and up to 100% such as "50%", got {value!r}')


SharePercent = Annotated[float, BeforeValidator(parse_share)]
# Bounded numbers: a whole number in [ge, le], a finite number in (gt, lt).
AdaptiveCount = Annotated[WholeNumber, Field(ge=2, le=100_000)]
Repetitions = Annotated[WholeNumber, Field(ge=1, le=100_000)]
Warmup = Annotated[WholeNumber, Field(ge=0, le=1000)]
Seed = Annotated[WholeNumber, Field(ge=0, le=2**63 - 1)]
MaxFailures = Annotated[WholeNumber, Field(ge=0, le=1_000_000)]
Confidence = Annotated[RealNumber, Field(gt=0.5, lt=1.0, allow_inf_nan=False)]
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.+%-]*$"
Name = Annotated[str, Field(pattern=NAME_RE, max_length=64)]
ParamName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]

#: Metrics the harness measures itself for every command phase.
HARNESS_METRICS = {
    "wall_time": "s",  # monotonic clock, spawn to exit
    "user_time": "s",  # user CPU of the process and its waited-for children
    "system_time": "s",
    "cpu_time": "s",  # user + system
    "max_rss": "KiB",  # peak resident set size of the largest process
}


class HookSpec(Strict):
    """An experiment-level hook as a table: ``before_each = { command = "...", on = "dut" }``
    (the plain string form runs here)."""

    command: Command
    on: Name | None = None  # a host of [hosts]; default: this machine


def _hook(value: object) -> object:
    return {"command": value} if isinstance(value, str) else value


Hook = Annotated[HookSpec, BeforeValidator(_hook)]


class VariantSpec(Strict):
    """One `[[variant]]`: what differs between the things compared."""

    name: Name
    description: Text = ""
    setup: Command | None = None  # shell command before each run of this variant
    teardown: Command | None = None  # shell command after each run (also after a failure)
    # variant-only parameters, or overrides of [params] constants (not of matrix parameters)
    params: dict[ParamName, Scalar] = {}
    env: Env = {}  # environment for every command of this variant
    on: Name | None = None  # the host setup and teardown run on (default: this machine)
    # the kernel (`uname -r`) its runs need on its `on` host: booted into if another runs,
    # verified after booting; never a run recorded on another kernel
    kernel: Short | None = None
    cmdline: Short | None = None  # text /proc/cmdline must contain on that host
    boot: Command | None = None  # this variant's boot command (default: the host's)
    # run here (this machine) before the variant's first run, before its host is booted:
    # builds the kernel it names (a build that fails fails the variant's runs, with the
    # build's last lines)
    build: Command | None = None


MonitorSource = Literal["vmstat", "meminfo", "psi", "cpu", "net"]


class MonitorSpec(Strict):
    """``monitor = { interval = "200ms", sources = ["vmstat", "psi"] }``: /proc sampled while
    a phase runs (top level: every measured phase; on a phase: that phase, replacing it)."""

    interval: Duration = 1.0  # between samples (≥ 10 ms)
    sources: Annotated[list[MonitorSource], Field(min_length=1)] = [
        "vmstat",
        "meminfo",
        "psi",
        "cpu",
        "net",
    ]
    # the host sampled (a server under test while the load comes from elsewhere); default:
    # where the phase runs (a command phase's `on`, else this machine)
    on: Name | None = None


#: `profile = true | "process" | "system"` (false: off), see perflab.observe.profile.
Profile = Bool | Literal["process", "system"]


#: The validation context entry (``ExperimentSpec.model_validate(data, context=...)``) that
#: names the kinds of phase: each kind's key in a [[phase]] table → the type of its value
#: (`perflab.spec.phase_kinds.schemas`). The schema itself names no kind.
PHASE_KINDS: Final = "phase_kinds"


class PhaseSpec(Strict):
    """One `[[phase]]` of every run, executed in the order written.

    What it runs is its kind: the one key of a phase kind it has — ``command = "..."``,
    ``[phase.kv]``, ``[phase.probe]`` (`perflab.spec.phase_kinds`: each kind's key, the type
    of its value, its rules). Those keys come after ``measure``, in the order the kinds are
    registered (`phase_model`); the value is `kind_value`."""

    name: Name
    measure: Bool = True  # false: runs (e.g. populate) but yields no metrics
    # (here: the kinds' keys — command, kv, probe, … — see phase_model)
    # pin to N picked cores (same type, no SMT siblings); may be "{param}" of a matrix parameter
    cores: Cores | None = None
    shell: Bool = True  # false: split `command` with shlex and exec it without /bin/sh
    parser: Short | None = None  # named parser of stdout: memtier, hyperfine, ...
    timeout: Duration | None = None  # this phase's limit (the run's `timeout` also applies)
    env: Env = {}
    # the host a command phase runs on (default: this machine); a kv phase's load comes from
    # one process on each host of a list (or from the one host named), merged
    on: Name | list[Name] | None = None
    # files a command phase leaves (relative to its working directory on its host), kept with
    # the run as artifacts `file:PHASE:PATH`; one missing fails the run
    fetch: Annotated[list[Short], Field(max_length=100)] = []
    processes: Annotated[int, Field(ge=1, le=256)] = 1  # a kv phase's load processes per host
    # perf record -g during this phase: true/"process" its process tree, "system" the whole
    # host (-a); false: never (overrides the experiment's `profile` and `perflab run --profile`)
    profile: Profile | None = None
    profile_on: Name | None = None  # the host recorded whole when profiled (a device under test)
    # perf stat events counted around a command phase's command: "page-faults", "cycles", …
    # or, with counters_on, events its control's `counters` command prints
    counters: Annotated[list[Short], Field(max_length=64)] = []
    # a device host whose `[hosts.NAME.control] counters` counts this phase (any kind)
    counters_on: Name | None = None
    monitor: MonitorSpec | None = None  # /proc sampled while this phase runs (see MonitorSpec)
    _kinds: dict[str, Any] = PrivateAttr(default_factory=dict)  # kind key → its value

    @model_validator(mode="wrap")
    @classmethod
    def _with_kind(
        cls, data: Any, handler: ModelWrapValidatorHandler[PhaseSpec], info: ValidationInfo
    ) -> PhaseSpec:
        """Validated with the kinds' keys of the context (`PHASE_KINDS`) in their place, so
        that the table's errors come in the order of its keys; the kinds' values kept."""
        kinds: dict[str, Any] = (info.context or {}).get(PHASE_KINDS) or {}
        if not kinds or not isinstance(data, dict):
            return handler(data)
        checked = phase_model(tuple(kinds.items())).model_validate(data)
        phase = handler({k: v for k, v in data.items() if k not in kinds})
        phase._kinds = {k: getattr(checked, k) for k in kinds if k in data}
        return phase

    @property
    def kind_keys(self) -> tuple[str, ...]:
        """The keys of phase kinds it has: exactly one in a valid spec (`check_phases`)."""
        return tuple(self._kinds)

    @property
    def kind_value(self) -> Any:
        """The value of its kind's key: a command phase's command, a kv or probe table."""
        return next(iter(self._kinds.values()), None)

    @property
    def host(self) -> str | None:
        """The host a command phase runs on (None: this machine); lists are for kv phases."""
        return self.on if isinstance(self.on, str) else None

    @property
    def load_hosts(self) -> list[str]:
        """The hosts of a kv phase's load processes, each once; [] = in this process, here."""
        hosts = [self.on] if isinstance(self.on, str) else list(self.on or [])
        if hosts == ["local"] and self.processes == 1:
            return []
        return list(dict.fromkeys(hosts))


@functools.cache
def phase_model(kinds: tuple[tuple[str, Any], ...]) -> type[BaseModel]:
    """What a [[phase]] table is validated with: `PhaseSpec`'s keys, and each kind's key
    (``kinds``: (key, type of its value), in order) after ``measure`` — the order its
    errors are reported and its keys are listed in."""
    fields: dict[str, Any] = {}
    for name, info in PhaseSpec.model_fields.items():
        fields[name] = (info.annotation, info)
        if name == "measure":
            fields.update({key: (schema | None, None) for key, schema in kinds})
    return create_model("PhaseSpec", __base__=Strict, **fields)


FREE_PORT: Final = "{free_port}"


class ServiceSpec(Strict):
    """One `[[service]]`: a long-running process (a server under test, a load sink) started
    before the phases of its scope, waited for until ready, stopped at its scope's end."""

    name: ParamName  # its port is `{NAME_port}` in every other command
    command: Command  # `{port}` is its own port; the run's parameters as in any command
    # "run": around every run's phases; "variant": while runs of one variant follow each
    # other; "experiment": from before the first run to after the last
    scope: Literal["run", "variant", "experiment"] = "run"
    port: Annotated[int, Field(ge=1, le=65535)] | Literal["{free_port}"] | None = None
    # readiness: "tcp://HOST:PORT", "unix:///path", "log:REGEX" (a line of its output),
    # or "cmd:COMMAND" (exits 0); none: started is ready
    ready: Short | None = None
    ready_timeout: Duration = 30.0
    env: Env = {}
    shell: Bool = True
    on: Name | None = None  # the host it runs on (a server under test on a DUT); default here


class MetricSpec(Strict):
    """One `[[metric]]`: a number taken from each run, and which way is better."""

    name: Name
    better: Literal["higher", "lower"]
    unit: Short = ""
    phase: Name | None = None  # default: the last measured phase
    # Where the value comes from — at most one of these; with none, the metric's name
    # is looked up in the phase's parser output (or kv result), then in harness metrics.
    harness: Literal["wall_time", "user_time", "system_time", "cpu_time", "max_rss"] | None = None
    json_path: Short | list[Short | StrictInt] | None = Field(None, alias="json")
    regex: Short | None = None  # with a named group `value`, or exactly one group
    field: Short | None = None  # name in the phase parser's (or kv's) output
    counter: Short | None = None  # a perf event of the phase's `counters`, or "ipc"
    monitor: Short | None = None  # a monitor summary: "vmstat.pgfault_per_s", "psi.memory.some_pct"
    stream: Literal["stdout", "stderr"] = "stdout"  # for json and regex
    scale: Annotated[StrictFloat, Field(allow_inf_nan=False)] | StrictInt = (
        1  # multiply (unit conversion)
    )
    # Harness overhead subtracted from every run's value, measured in the same run (so in the
    # same interleaved schedule) and taken out of it by the metric's own source: either a
    # command run right after this metric's phase (the lookup-structure experiment's random() run; `true` for the
    # shell's start-up, as hyperfine corrects), or another measured phase of the run.
    overhead: OverheadCommand | None = None
    overhead_phase: Name | None = None


class AdaptiveRepetitions(Strict):
    """`repetitions = { min = 5, max = 50, target_ci = "1%" }`: blocks are added one at a
    time after `min` until every tracked interval's half-width is ≤ target_ci (or `max`)."""

    min: AdaptiveCount
    max: AdaptiveCount
    target_ci: Percent  # half-width of the relative-change interval, e.g. "1%"
    metrics: list[Name] = []  # the metrics that must reach it (default: every metric)


class ExperimentSpec(Strict):
    """The whole experiment file."""

    name: Name
    description: Text = ""
    # its place in a series (perflab history): "v1.5", or { command = "git describe" } run
    # when it starts; and the source built: { repo = ".", commit = "…" } (see spec/position.py)
    version: VersionText | VersionCommand | None = None
    source: SourceSpec | None = None
    baseline: Name  # the variant others are compared against
    # measured runs per cell × variant, or adaptive: { min, max, target_ci }
    repetitions: Repetitions | AdaptiveRepetitions = 10
    warmup: Warmup = 0  # extra runs first, recorded, excluded
    order: Literal["interleaved", "sequential"] = "interleaved"
    seed: Seed = 1  # seeds the interleaved order
    timeout: Duration | None = None  # per run, all phases and hooks included
    build_timeout: Duration = 3600.0  # a variant's build (it is not part of any run)
    on_failure: Literal["continue", "abort"] = "continue"
    # stop early when this many runs in a row (or the first this many of a variant) fail the
    # same way — same step, same exit status/signal/timeout; 0: never (execution/failure_policy.py)
    max_failures: MaxFailures = 3
    # stop when more than this share of the finished runs failed (counted from 10 runs on)
    max_failure_share: SharePercent = 0.5
    # between SIGTERM and SIGKILL when a step's processes are stopped (timeout, Ctrl-C, run end)
    kill_grace: Duration = 2.0
    # at most one system snapshot per this time after the start's (each samples processes for
    # 0.25 s: after every block of short runs it would dominate the experiment and disturb
    # the run after it); 0: after every block; always one after the last run
    snapshot_every: DurationOrZero = 10.0
    confidence: Confidence = 0.95
    workdir: Short | None = None  # cwd of every command; default: the spec's directory
    # hooks: a command, or { command = "...", on = "HOST" } to run it on a host
    before_all: Hook | None = None  # once each time the experiment (re)starts
    after_all: Hook | None = None
    before_each: Hook | None = None  # before every run (e.g. a reset, a reboot)
    after_each: Hook | None = None
    hosts: dict[Name, HostSpec] = {}  # machines reached over SSH, named by `on = "NAME"`
    # perf record -g during every measured phase: true/"process" (its process tree), "system"
    profile: Profile | None = None
    monitor: MonitorSpec | None = None  # /proc sampled during every measured phase
    env: Env = {}
    params: dict[ParamName, Scalar] = {}  # constants usable as `{name}`
    tools: Annotated[
        list[Short], Field(max_length=1000)
    ] = []  # programs whose versions are recorded
    matrix: dict[ParamName, list[Scalar] | dict[Label, Scalar]] = {}
    variant: list[VariantSpec] = Field(min_length=1)
    service: list[ServiceSpec] = []
    phase: list[PhaseSpec] = Field(min_length=1)
    metric: list[MetricSpec] = Field(min_length=1)

    def metric_phase(self, metric: MetricSpec) -> str:
        """The phase a metric is taken from: its own `phase`, else the last measured phase
        (other than the metric's overhead phase)."""
        if metric.phase is not None:
            return metric.phase
        measured = [p.name for p in self.phase if p.measure and p.name != metric.overhead_phase]
        return (measured or [p.name for p in self.phase if p.measure])[-1]

    def phase_monitor(self, phase: PhaseSpec) -> MonitorSpec | None:
        """What is sampled while ``phase`` runs: its own `monitor`, else the experiment's
        for a measured phase."""
        return phase.monitor or (self.monitor if phase.measure else None)

    @property
    def adaptive(self) -> AdaptiveRepetitions | None:
        return self.repetitions if isinstance(self.repetitions, AdaptiveRepetitions) else None

    @property
    def initial_repetitions(self) -> int:
        """Blocks planned up front: the fixed count, or an adaptive design's minimum."""
        return (
            self.repetitions.min
            if isinstance(self.repetitions, AdaptiveRepetitions)
            else self.repetitions
        )


def model_at(loc: KeyPath, kinds: dict[str, Any] | None = None) -> type[BaseModel] | None:
    """The model class that validates the table at ``loc`` (for key suggestions); a phase's
    with the keys of ``kinds`` (`PHASE_KINDS`)."""
    tables: dict[str, type[BaseModel]] = {
        "variant": VariantSpec,
        "phase": phase_model(tuple((kinds or {}).items())),
        "service": ServiceSpec,
        "metric": MetricSpec,
        "repetitions": AdaptiveRepetitions,
        "version": VersionCommand,
        "source": SourceSpec,
        "monitor": MonitorSpec,
        "before_all": HookSpec,
        "after_all": HookSpec,
        "before_each": HookSpec,
        "after_each": HookSpec,
    }
    model: type[BaseModel] | None = ExperimentSpec
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            field = next((f for f in model.model_fields.values() if f.alias == part), None)
        if field is None:
            return None
        model = tables.get(part) if model is ExperimentSpec else None
    return model


def key_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def regex_value_group(pattern: str) -> str | int:
    """Which group of a metric regex holds the value: ``value`` or the only group."""
    rx = re.compile(pattern)
    if "value" in rx.groupindex:
        return "value"
    if rx.groups == 1:
        return 1
    raise ValueError("a metric regex needs a named group (?P<value>...) or exactly one group")
