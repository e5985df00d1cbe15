"""Rules for [[service]]: unique names, ready probes, the parameters each scope may use."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from perflab.spec.name_rules import choices_hint, unique_names
from perflab.spec.param_names import BUILTIN_PARAMS, PER_RUN, all_variant_params, service_ports
from perflab.spec.template import placeholders

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec

#: How a service's `ready` may begin (what it waits for).
READY_KINDS = ("tcp://", "unix://", "log:", "cmd:")


def check_services(spec: Spec) -> None:
    m = spec.model
    unique_names(spec, "service", [s.name for s in m.service])
    taken = set(BUILTIN_PARAMS) | set(m.params) | set(m.matrix) | all_variant_params(m)
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
                        hint=choices_hint(name, sorted(known))
                        + " (write {{ }} for literal braces)",
                    )
