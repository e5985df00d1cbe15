"""Cross-field rules of an experiment file, each reported at its own file:line.

`check_spec` runs them in a fixed order (the first broken rule is the error reported):
names and parameters here; then the rules of phases (each by its kind), metrics, the
plan, hosts, services, templates and phases as each cell renders them (``*_rules``
modules next to this one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.spec.host_rules import check_hosts
from perflab.spec.metric_rules import check_metric, check_metric_names
from perflab.spec.name_rules import choices_hint, unique_names
from perflab.spec.observe_rules import check_observe
from perflab.spec.param_names import BUILTIN_PARAMS
from perflab.spec.phase_rules import check_phases, check_rendered
from perflab.spec.plan_rules import check_adaptive, check_size
from perflab.spec.service_rules import check_services
from perflab.spec.template_rules import check_boot_templates, check_templates

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec


def check_spec(spec: Spec) -> None:
    m = spec.model
    _check_names(spec)
    _check_params(spec)
    _check_variant_params(spec)
    check_size(spec)
    check_phases(spec)
    measured = [p for p in m.phase if p.measure]
    if not measured:
        raise spec.error(("phase",), "no phase is measured", hint="set measure = true on one phase")
    for i, x in enumerate(m.metric):
        check_metric(spec, i, x, measured)
    check_observe(spec)
    check_adaptive(spec)
    check_hosts(spec)
    check_services(spec)
    check_templates(spec)
    check_boot_templates(spec)
    modes = check_rendered(spec)
    check_metric_names(spec, modes)


def _check_names(spec: Spec) -> None:
    """Variants, phases and metrics have unique names; the baseline is a variant."""
    m = spec.model
    variants = [v.name for v in m.variant]
    unique_names(spec, "variant", variants)
    unique_names(spec, "phase", [p.name for p in m.phase])
    unique_names(spec, "metric", [x.name for x in m.metric])
    if m.baseline not in variants:
        raise spec.error(
            ("baseline",),
            f"baseline '{m.baseline}' is not a variant",
            hint=choices_hint(m.baseline, variants),
        )


def _check_params(spec: Spec) -> None:
    """Matrix parameters have distinct values; no name is both a matrix parameter and a
    constant, or a built-in."""
    m = spec.model
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
