"""Cross-field rules of an experiment file, each reported at its own file:line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from perflab.spec import limits
from perflab.spec.locate import Path as KeyPath
from perflab.spec.matrix import expand_matrix
from perflab.spec.metric_names import (
    NameSet,
    kv_absence_reason,
    kv_names,
    parser_names,
    probe_names,
)
from perflab.spec.schema import (
    HARNESS_METRICS,
    OVERHEAD_SUFFIXES,
    ExperimentSpec,
    MetricSpec,
    PhaseSpec,
    regex_value_group,
)
from perflab.spec.template import placeholders, render_value

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.workloads.kv_config import KvConfig

#: Names every command may use besides the spec's parameters.
BUILTIN_PARAMS = (
    "variant",
    "repetition",
    "run",
    "cell",
    "experiment",
    "run_dir",
    "seed",
    "block",
    "cores_list",
)


def check_spec(spec: Spec) -> None:
    m = spec.model
    variants = [v.name for v in m.variant]
    _unique(spec, "variant", variants)
    _unique(spec, "phase", [p.name for p in m.phase])
    _unique(spec, "metric", [x.name for x in m.metric])
    if m.baseline not in variants:
        raise spec.error(
            ("baseline",),
            f"baseline '{m.baseline}' is not a variant",
            hint=_choices(m.baseline, variants),
        )
    if len(variants) < 2:
        raise spec.error(
            ("variant",),
            "an experiment needs at least two variants to compare",
            hint="add a [[variant]] besides the baseline",
        )
    for name, values in m.matrix.items():
        if len(values) == 0:
            raise spec.error(("matrix", name), f"matrix parameter '{name}' has no values")
        if isinstance(values, list) and len({str(v) for v in values}) != len(values):
            raise spec.error(("matrix", name), f"matrix parameter '{name}' repeats a value")
        if name in m.params:
            raise spec.error(
                ("params", name), f"'{name}' is both a matrix parameter and a constant"
            )
        if name in BUILTIN_PARAMS:
            raise spec.error(("matrix", name), f"'{name}' is a built-in name; choose another")
    for name in m.params:
        if name in BUILTIN_PARAMS:
            raise spec.error(("params", name), f"'{name}' is a built-in name; choose another")
    _check_variant_params(spec)
    _check_size(spec)
    for i, p in enumerate(m.phase):
        if sum(x is not None for x in (p.command, p.kv, p.probe)) != 1:
            raise spec.error(
                ("phase", i), f"phase '{p.name}' needs exactly one of 'command', 'kv' or 'probe'"
            )
        if p.probe is not None:
            from perflab.workloads.probes import PROBES

            probe_name = p.probe.get("name")
            if probe_name not in PROBES:
                raise spec.error(
                    ("phase", i, "probe"),
                    f"probe phase '{p.name}': name = {probe_name!r} is not a probe",
                    hint="use " + " | ".join(f'"{x}"' for x in PROBES),
                )
            if p.parser is not None:
                raise spec.error(
                    ("phase", i, "parser"), "a probe phase has its own metrics; remove 'parser'"
                )
        if p.parser is not None:
            _check_parser(spec, ("phase", i, "parser"), p.parser)
        if p.kv is not None and p.cores is not None:
            raise spec.error(
                ("phase", i, "cores"),
                "cores applies to command and probe phases, not kv "
                "(the load generator's threads are its own: use threads = N)",
            )
        if p.kv is not None and p.parser is not None:
            raise spec.error(
                ("phase", i, "parser"), "a kv phase has its own metrics; remove 'parser'"
            )
    measured = [p for p in m.phase if p.measure]
    if not measured:
        raise spec.error(("phase",), "no phase is measured", hint="set measure = true on one phase")
    for i, x in enumerate(m.metric):
        _check_metric(spec, i, x, measured)
    _check_adaptive(spec)
    _check_hosts(spec)
    _check_services(spec)
    _check_templates(spec)
    kv_modes = _check_kv(spec)
    _check_metric_names(spec, kv_modes)


def _unique(spec: Spec, table: str, names: list[str]) -> None:
    seen: set[str] = set()
    for i, n in enumerate(names):
        if n in seen:
            raise spec.error((table, i, "name"), f"duplicate {table} name '{n}'")
        seen.add(n)


def _choices(value: str, names: Iterable[str]) -> str:
    names = list(names)
    close = difflib.get_close_matches(value, names, n=1)
    return f"did you mean '{close[0]}'?" if close else "choose from: " + ", ".join(names)


def _check_parser(spec: Spec, loc: KeyPath, name: str) -> None:
    from perflab.workloads.parsers import available_parsers

    known = available_parsers()
    if name not in known:
        raise spec.error(loc, f"unknown parser '{name}'", hint=_choices(name, known))


def _check_metric(spec: Spec, i: int, x: MetricSpec, measured: list[PhaseSpec]) -> None:
    loc = ("metric", i)
    sources = [k for k in ("harness", "json_path", "regex") if getattr(x, k) is not None]
    if x.field is not None:
        sources.append("field")
    if len(sources) > 1:
        names = ", ".join("json" if s == "json_path" else s for s in sources)
        raise spec.error(loc, f"metric '{x.name}' has several sources ({names}); keep one")
    if x.phase is not None:
        phase = next((p for p in spec.model.phase if p.name == x.phase), None)
        if phase is None:
            raise spec.error(
                loc + ("phase",),
                f"metric '{x.name}' names unknown phase '{x.phase}'",
                hint=_choices(x.phase, [p.name for p in spec.model.phase]),
            )
        if not phase.measure:
            raise spec.error(
                loc + ("phase",), f"phase '{x.phase}' is not measured (measure = false)"
            )
    else:
        phase = next(p for p in measured if p.name == spec.model.metric_phase(x))
    if x.regex is not None:
        try:
            regex_value_group(x.regex)
        except re.error as e:
            raise spec.error(loc + ("regex",), f"bad regex: {e}") from None
        except ValueError as e:
            raise spec.error(loc + ("regex",), str(e)) from None
    # Implicit source: parser/kv output by name, else a harness metric by name.
    if (
        not sources
        and phase.parser is None
        and phase.kv is None
        and phase.probe is None
        and x.name not in HARNESS_METRICS
    ):
        raise spec.error(
            loc,
            f"metric '{x.name}' has no source",
            hint='add harness = "wall_time", json = "path", regex = "...", or a parser on the phase',
        )
    if x.field is not None and phase.parser is None and phase.kv is None and phase.probe is None:
        raise spec.error(
            loc + ("field",),
            f"metric '{x.name}' uses 'field' but phase '{phase.name}' has no parser",
        )
    _check_overhead(spec, i, x, phase)


def _check_overhead(spec: Spec, i: int, x: MetricSpec, phase: PhaseSpec) -> None:
    loc = ("metric", i)
    if x.overhead is not None and x.overhead_phase is not None:
        raise spec.error(
            loc + ("overhead_phase",),
            f"metric '{x.name}' has both 'overhead' and 'overhead_phase'; keep one",
        )
    if x.overhead is not None:
        if phase.command is None:
            raise spec.error(
                loc + ("overhead",),
                f"an overhead command needs a command phase; "
                f"'{phase.name}' is a {'kv' if phase.kv is not None else 'probe'} phase",
            )
        if not x.overhead.strip():
            raise spec.error(
                loc + ("overhead",),
                "the overhead command is empty",
                hint='to subtract the shell\'s start-up, use overhead = "true"',
            )
    if x.overhead_phase is not None:
        other = next((p for p in spec.model.phase if p.name == x.overhead_phase), None)
        if other is None:
            raise spec.error(
                loc + ("overhead_phase",),
                f"metric '{x.name}' names unknown phase '{x.overhead_phase}'",
                hint=_choices(x.overhead_phase, [p.name for p in spec.model.phase]),
            )
        if other is phase:
            raise spec.error(
                loc + ("overhead_phase",),
                f"the overhead phase must differ from the metric's own phase '{phase.name}'",
            )
        if not other.measure:
            raise spec.error(
                loc + ("overhead_phase",),
                f"phase '{other.name}' is not measured "
                "(measure = false), so nothing can be taken from it",
            )
    if x.overhead is not None or x.overhead_phase is not None:
        names = {m.name for m in spec.model.metric}
        for suffix in OVERHEAD_SUFFIXES:
            if x.name + suffix in names:
                raise spec.error(
                    loc + ("name",),
                    f"metric '{x.name}{suffix}' collides with the "
                    f"{suffix[1:]} value perflab records for '{x.name}'; rename it",
                )


def _check_adaptive(spec: Spec) -> None:
    m = spec.model
    a = m.adaptive
    if a is None:
        return
    if a.min > a.max:
        raise spec.error(
            ("repetitions", "max"), f"repetitions: max ({a.max}) is below min ({a.min})"
        )
    if m.order != "interleaved":
        raise spec.error(
            ("order",),
            'adaptive repetitions add whole blocks, so they need order = "interleaved"',
            hint="remove order, or give repetitions as a number",
        )
    known = [x.name for x in m.metric]
    for name in a.metrics:
        if name not in known:
            raise spec.error(
                ("repetitions", "metrics"),
                f"repetitions.metrics names unknown metric '{name}'",
                hint=_choices(name, known),
            )


HOOKS = ("before_all", "after_all", "before_each", "after_each")


def _check_hosts(spec: Spec) -> None:
    """Every `on` names a host of [hosts] (or `local`); what runs elsewhere can."""
    m = spec.model
    known = ["local", *m.hosts]
    if "local" in m.hosts:
        raise spec.error(("hosts", "local"), "'local' is this machine; name the host otherwise")
    places: list[tuple[KeyPath, str | None]] = [
        ((name, "on"), getattr(m, name).on) for name in HOOKS if getattr(m, name)
    ]
    places += [(("variant", i, "on"), v.on) for i, v in enumerate(m.variant)]
    places += [(("phase", i, "on"), p.on) for i, p in enumerate(m.phase)]
    for loc, on in places:
        if on is not None and on not in known:
            raise spec.error(
                loc, f"unknown host '{on}'", hint=_choices(on, known) + " (hosts are [hosts.NAME])"
            )
    for i, v in enumerate(m.variant):
        if (v.kernel or v.cmdline or v.boot) and v.on in (None, "local"):
            raise spec.error(
                ("variant", i, "kernel" if v.kernel else "cmdline" if v.cmdline else "boot"),
                f"variant '{v.name}' names a kernel but runs on this machine, which perflab "
                "cannot reboot under itself: set on = a host of [hosts]",
            )
        if v.cmdline and not v.kernel:
            raise spec.error(("variant", i, "cmdline"), "cmdline is checked with kernel: set it")
    for i, p in enumerate(m.phase):
        if p.on in (None, "local"):
            continue
        if p.command is None:
            raise spec.error(
                ("phase", i, "on"),
                "on = places command phases; kv and probe phases run on this machine",
            )
        if p.cores is not None:
            raise spec.error(
                ("phase", i, "cores"),
                f"cores are picked on this machine, and phase '{p.name}' runs on '{p.on}': "
                "pin it there with taskset in its command",
            )


PER_RUN = ("repetition", "run", "cell", "run_dir", "seed", "block", "cores_list")
READY_KINDS = ("tcp://", "unix://", "log:", "cmd:")


def service_ports(m: Any) -> list[str]:
    """The parameters services give every command: ``{NAME_port}``."""
    return [f"{s.name}_port" for s in m.service if s.port is not None]


def _check_services(spec: Spec) -> None:
    m = spec.model
    _unique(spec, "service", [s.name for s in m.service])
    taken = set(BUILTIN_PARAMS) | set(m.params) | set(m.matrix) | _all_variant_params(m)
    for i, s in enumerate(m.service):
        if f"{s.name}_port" in taken and s.port is not None:
            raise spec.error(
                ("service", i, "name"), f"'{s.name}_port' is already a parameter; rename one"
            )
        if s.ready is not None:
            if not s.ready.startswith(READY_KINDS):
                raise spec.error(
                    ("service", i, "ready"),
                    f"ready = {s.ready!r}: use tcp://HOST:PORT, unix:///path, log:REGEX or "
                    "cmd:COMMAND",
                )
            if s.ready.startswith("log:"):
                try:
                    re.compile(s.ready[4:])
                except re.error as e:
                    raise spec.error(("service", i, "ready"), f"bad regex: {e}") from None
        texts = [(("service", i, "command"), s.command)]
        texts += [(("service", i, "ready"), s.ready)] if s.ready else []
        known = taken | set(service_ports(m)) | ({"port"} if s.port is not None else set())
        for loc, text in texts:
            for name in placeholders(text):
                if s.scope == "experiment" and (name in PER_RUN or name == "variant"):
                    raise spec.error(loc, f"'{{{name}}}' is per run; this service runs once")
                if s.scope == "variant" and name in PER_RUN:
                    raise spec.error(loc, f"'{{{name}}}' is per run; this service spans runs")
                if name not in known:
                    raise spec.error(
                        loc,
                        f"unknown parameter '{{{name}}}'",
                        hint=_choices(name, sorted(known)) + " (write {{ }} for literal braces)",
                    )


def _check_templates(spec: Spec) -> None:
    m = spec.model
    base = set(BUILTIN_PARAMS) | set(m.params) | set(m.matrix) | set(service_ports(m))
    common: list[tuple[KeyPath, str | None]] = [
        ((name,), hook.command) for name in HOOKS if (hook := getattr(m, name)) is not None
    ]
    common += [(("phase", i, "command"), p.command) for i, p in enumerate(m.phase)]
    common += [(("metric", i, "overhead"), x.overhead) for i, x in enumerate(m.metric)]
    for vi, v in enumerate(m.variant):
        known = base | set(v.params)
        own = [(("variant", vi, "setup"), v.setup), (("variant", vi, "teardown"), v.teardown)]
        for loc, text in common + own:
            if text is None:
                continue
            for name in placeholders(text):
                if loc[0] in ("before_all", "after_all") and name in (
                    "variant",
                    "repetition",
                    "run",
                    "cell",
                    "run_dir",
                    "seed",
                    "block",
                    "cores_list",
                ):
                    raise spec.error(loc, f"'{{{name}}}' is per run; {loc[0]} runs once")
                if name not in known:
                    where = f" for variant '{v.name}'" if name in _all_variant_params(m) else ""
                    raise spec.error(
                        loc,
                        f"unknown parameter '{{{name}}}'{where}",
                        hint=_choices(name, sorted(known)) + " (write {{ }} for literal braces)",
                    )


def _all_variant_params(m: ExperimentSpec) -> set[str]:
    return {k for v in m.variant for k in v.params}


def _check_kv(spec: Spec) -> dict[int, set[tuple[bool, bool]]]:
    """Validate every kv table as each cell and variant renders it; returns, per kv phase,
    the (open loop, sends GETs) modes it runs in — what decides the metrics it reports."""
    m = spec.model
    kv_phases = [(i, p) for i, p in enumerate(m.phase) if p.kv is not None]
    modes: dict[int, set[tuple[bool, bool]]] = {i: set() for i, _ in kv_phases}
    if not kv_phases:
        return modes
    for cell in expand_matrix(m.matrix):
        for v in m.variant:
            values = {
                **dict.fromkeys(BUILTIN_PARAMS, 0),
                **dict.fromkeys(service_ports(m), 1),
                **m.params,
                **cell.values,
                **v.params,
            }
            for i, p in kv_phases:
                for name in _kv_placeholders(p.kv):
                    if name not in values:
                        raise spec.error(("phase", i, "kv"), f"unknown parameter '{{{name}}}'")
                table = render_value(p.kv, values)
                config = _kv_config(spec, ("phase", i, "kv"), table)
                modes[i].add((config.rate is not None, int(config.ratio.split(":")[1]) > 0))
    return modes


def _kv_config(spec: Spec, loc: KeyPath, table: dict[str, Any]) -> KvConfig:
    """The kv table as the load generator's settings, or its first error at file:line."""
    from perflab.workloads.kv_config import KvConfig, validation_messages

    try:
        return KvConfig.model_validate(table)
    except ValidationError as e:
        path, message = validation_messages(e)[0]
        parts = tuple(int(p) if p.isdigit() else p for p in path.split(".")) if path else ()
        raise spec.error(
            loc + parts, f"kv {path}: {message}" if path else f"kv: {message}"
        ) from None


def _check_variant_params(spec: Spec) -> None:
    """A variant's params may add parameters or override [params] constants, not matrix
    parameters: its cells would be labelled with matrix values its commands never got."""
    m = spec.model
    for vi, v in enumerate(m.variant):
        for name in v.params:
            if name in m.matrix:
                raise spec.error(
                    ("variant", vi, "params", name),
                    f"variant '{v.name}' sets '{name}', a matrix parameter: its cells would be "
                    "labelled with values that never ran",
                    hint="remove it, or make it a variant-only parameter",
                )


def _check_size(spec: Spec) -> None:
    """The matrix and the plan stay within `limits` (before anything expands them)."""
    m = spec.model
    cells = 1
    for values in m.matrix.values():
        cells *= len(values)
    if cells > limits.MAX_CELLS:
        counts = " × ".join(str(len(v)) for v in m.matrix.values())
        raise spec.error(
            ("matrix",),
            f"the matrix has {counts} = {cells:,} cells; the limit is {limits.MAX_CELLS:,}",
            hint="split the experiment, or drop values",
        )
    reps = m.adaptive.max if m.adaptive else m.initial_repetitions
    runs = cells * len(m.variant) * (m.warmup + reps)
    if runs > limits.MAX_RUNS:
        raise spec.error(
            ("repetitions",),
            f"the plan has {runs:,} runs: {cells:,} cells × {len(m.variant):,} "
            f"variants × ({m.warmup} warm-up + {reps:,}{' (adaptive max)' if m.adaptive else ''} "
            f"runs); the limit is {limits.MAX_RUNS:,}",
            hint="fewer repetitions, variants or cells",
        )


def _check_metric_names(spec: Spec, kv_modes: dict[int, set[tuple[bool, bool]]]) -> None:
    """A metric taken by name from a kv, probe or parser phase names something that phase
    reports (checked now, with a suggestion, rather than failing every run)."""
    m = spec.model
    index = {p.name: i for i, p in enumerate(m.phase)}
    known: dict[int, NameSet | None] = {}
    for mi, x in enumerate(m.metric):
        if any(getattr(x, k) is not None for k in ("harness", "json_path", "regex")):
            continue
        pi = index[m.metric_phase(x)]
        phase = m.phase[pi]
        if pi not in known:
            known[pi] = _phase_names(phase, kv_modes.get(pi))
        names = known[pi]
        if names is None:
            continue
        key = x.field or x.name
        loc = ("metric", mi, "field" if x.field is not None else "name")
        if names.matches(key) or (
            x.field is None and phase.command is not None and key in HARNESS_METRICS
        ):
            continue
        close = names.suggestion(key)
        if not names.closed and close is None:
            continue  # an open set (memtier's table): perhaps a column perflab does not know
        source = (
            f"kv phase '{phase.name}'"
            if phase.kv is not None
            else (
                f"probe phase '{phase.name}'"
                if phase.probe is not None
                else f"phase '{phase.name}' ({names.what})"
            )
        )
        message = (
            f"metric '{x.name}': {source} reports no field '{key}'"
            if x.field is not None
            else f"{source} reports no metric '{key}'"
        )
        reason = kv_absence_reason(key) if phase.kv is not None else None
        hint = f"did you mean '{close}'?" if close else reason or f"it reports {names.listing()}"
        raise spec.error(loc, message, hint=hint)


def _phase_names(phase: PhaseSpec, kv_modes: Iterable[tuple[bool, bool]] | None) -> NameSet | None:
    if phase.kv is not None:
        return kv_names(f"kv phase '{phase.name}'", kv_modes or ())
    if phase.probe is not None:
        return probe_names(phase.probe)
    if phase.parser is not None:
        return parser_names(phase.parser)
    return None


def _kv_placeholders(value: Any) -> list[str]:
    if isinstance(value, str):
        return placeholders(value)
    if isinstance(value, dict):
        return [n for v in value.values() for n in _kv_placeholders(v)]
    if isinstance(value, list):
        return [n for v in value for n in _kv_placeholders(v)]
    return []
