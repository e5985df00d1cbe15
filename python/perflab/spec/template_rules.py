"""Rules for command templates: every ``{name}`` is a parameter where the command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.spec.name_rules import choices_hint
from perflab.spec.param_names import (
    BUILTIN_PARAMS,
    HOOKS,
    all_variant_params,
    pool_params,
    service_ports,
)
from perflab.spec.phase_kinds import kind_of
from perflab.spec.template import placeholders, render_value

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath
    from perflab.spec.schema import ExperimentSpec


def check_templates(spec: Spec) -> None:
    m = spec.model
    base = set(BUILTIN_PARAMS) | set(m.params) | set(m.matrix) | set(service_ports(m))
    per_device = set(pool_params(m))  # a pool's {slot}: the run's device
    common: list[tuple[KeyPath, str | None]] = [
        ((name,), hook.command) for name in HOOKS if (hook := getattr(m, name)) is not None
    ]
    common += [
        (("phase", i, kind_of(p).key), command)
        for i, p in enumerate(m.phase)
        for command in kind_of(p).commands(p)
    ]
    common += [(("metric", i, "overhead"), x.overhead) for i, x in enumerate(m.metric)]
    for vi, v in enumerate(m.variant):
        known = base | per_device | set(v.params)
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
                    *per_device,
                ):
                    raise spec.error(loc, f"'{{{name}}}' is per run; {loc[0]} runs once")
                if loc[0] in ("before_all", "after_all") and name not in base:
                    raise spec.error(
                        loc,
                        f"'{{{name}}}' is a variant's parameter; {loc[0]} runs once for every "
                        "variant (use it in the variant's setup, or its build)",
                    )
                if name not in known:
                    where = f" for variant '{v.name}'" if name in all_variant_params(m) else ""
                    raise spec.error(
                        loc,
                        f"unknown parameter '{{{name}}}'{where}",
                        hint=choices_hint(name, sorted(known))
                        + " (write {{ }} for literal braces)",
                    )
        _check_build_template(spec, vi, set(m.params) | set(v.params))
        for key in ("kernel", "cmdline"):  # rendered with the params when the spec loads
            for name in placeholders(getattr(v, key) or ""):
                names = sorted(set(m.params) | set(v.params))
                raise spec.error(
                    ("variant", vi, key),
                    f"unknown parameter '{{{name}}}': a variant's {key} knows [params] and "
                    "the variant's params",
                    hint=choices_hint(name, names) + " (write {{ }} for literal braces)"
                    if names
                    else "write {{ }} for literal braces",
                )


#: What a variant's build may name besides the spec's and the variant's params.
BUILD_NAMES = ("variant", "experiment")


def _check_build_template(spec: Spec, vi: int, params: set[str]) -> None:
    """A build runs once per variant, before any run: it names no cell, run or port."""
    text = spec.model.variant[vi].build
    known = params | set(BUILD_NAMES)
    for name in placeholders(text or ""):
        if name not in known:
            raise spec.error(
                ("variant", vi, "build"),
                f"unknown parameter '{{{name}}}': a build runs once per variant, before its "
                "runs, and knows {variant}, {experiment}, [params] and the variant's params",
                hint=choices_hint(name, sorted(known)) + " (write {{ }} for literal braces)",
            )


#: What a boot or control command may name besides the spec's params.
BOOT_NAMES = ("kernel", "cmdline", "host")


def check_boot_templates(spec: Spec) -> None:
    """Boot and control commands name only ``{kernel}``, ``{cmdline}``, ``{host}`` and
    the spec's params (they run outside any run); a pool's, ``{slot}`` too."""
    m = spec.model
    known = set(BOOT_NAMES) | set(m.params)
    places: list[tuple[KeyPath, str | None]] = [
        (("variant", i, "boot"), v.boot) for i, v in enumerate(m.variant)
    ]
    for name, h in m.hosts.items():
        places.append((("hosts", name, "boot"), h.boot))
        if h.control is not None:
            console = h.control.console or ""
            places += [
                (("hosts", name, "control", "boot"), h.control.boot),
                (("hosts", name, "control", "power_off"), h.control.power_off),
                (
                    ("hosts", name, "control", "console"),
                    console[4:] if console.startswith("cmd:") else None,
                ),
            ]
    for loc, text in places:
        pooled = loc[0] == "hosts" and m.hosts[str(loc[1])].pool is not None
        for name in placeholders(text or ""):
            if name not in known and not (pooled and name == "slot"):
                raise spec.error(
                    loc,
                    f"unknown parameter '{{{name}}}': a boot command knows "
                    "{kernel}, {cmdline}, {host} and [params]",
                    hint=choices_hint(name, sorted(known)) + " (write {{ }} for literal braces)",
                )


def render_kernels(model: ExperimentSpec) -> ExperimentSpec:
    """``{name}`` in a variant's ``kernel`` and ``cmdline`` replaced by the value of its
    params (or ``[params]``): ``kernel = "*-g{commit}"`` with ``params.commit``. A name
    that is neither stays as written, for `check_templates` to report at its line."""
    variants = []
    for v in model.variant:
        values = {**model.params, **v.params}
        update = {
            key: str(render_value(text, values))
            for key in ("kernel", "cmdline")
            if (text := getattr(v, key))
            and "{" in text
            and all(n in values for n in placeholders(text))
        }
        variants.append(v.model_copy(update=update) if update else v)
    if all(a is b for a, b in zip(variants, model.variant)):
        return model
    return model.model_copy(update={"variant": variants})
