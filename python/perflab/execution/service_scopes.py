"""The spec's ``[[service]]`` tables for one experiment: their ports (``{NAME_port}``, given
to every command), starting a scope's services, and the experiment- and variant-scope
services now running (run-scope ones belong to their run, `RunExecution`).

A service that cannot start fails its scope: a run-scope one its run, a variant-scope one
the runs of that variant it was started for (those that follow each other; the next
time the variant comes it is started again), an experiment-scope one the experiment."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from perflab.execution.services import ServiceError, ServiceRun, free_port
from perflab.spec.schema import FREE_PORT
from perflab.spec.template import render_shell, render_value
from perflab.store import artifact_keys as keys

if TYPE_CHECKING:
    import threading

    from perflab.execution.command import StepOutput
    from perflab.execution.experiment_hosts import Hosts
    from perflab.hosts.step import StepRequest
    from perflab.spec import Spec
    from perflab.spec.schema import VariantSpec
    from perflab.store import RunRow


class ServiceContext(Protocol):
    """What services need from the experiment around them (`perflab.execution.runner.Runner`)."""

    spec: Spec
    variants: dict[str, VariantSpec]

    hosts: Hosts  # every machine of the experiment by its spec name
    stop: threading.Event  # the experiment's stop request (Ctrl-C, SIGTERM)

    def experiment_values(self) -> dict[str, Any]: ...

    def step_env(self, run: RunRow | None, values: dict[str, Any] | None) -> dict[str, str]: ...

    def request(self, name: str, command: str, folder: Path) -> StepRequest: ...

    def step(self, name: str, request: StepRequest, *, host: str | None = None) -> StepOutput: ...


@dataclass(frozen=True)
class VariantServicesFailed:
    """A variant's services could not start: the reason its runs fail, and what the
    services printed (kept with the first of those runs)."""

    reason: str
    artifacts: dict[str, bytes]

    def again(self) -> VariantServicesFailed:
        """The same failure for the next run (the output is kept once)."""
        return VariantServicesFailed(self.reason, {})


def stop_services(services: dict[str, ServiceRun]) -> dict[str, bytes]:
    """Stops them (last started first); returns their output as run artifacts."""
    artifacts: dict[str, bytes] = {}
    for name in reversed(list(services)):
        out = services.pop(name).stop()
        if out is not None:
            for stream, data in (("stdout", out.stdout), ("stderr", out.stderr)):
                if data:
                    artifacts[keys.stream(stream, out.name)] = data
    return artifacts


class ServiceScopes:
    def __init__(self, context: ServiceContext):
        self.context = context
        self.ports: dict[str, int] = {}
        #: Services of scope "experiment" and "variant" now running.
        self.running: dict[str, ServiceRun] = {}
        self._variant: str | None = None  # the variant the running variant-scope ones are for
        # Why they could not start for it (and their output, kept with the first run they
        # failed), or None when they run.
        self._failed: VariantServicesFailed | None = None

    def start(
        self,
        scope: str,
        values: dict[str, Any],
        run_dir: Path,
        into: dict[str, ServiceRun],
        env: dict[str, str] | None = None,
    ) -> None:
        """Starts the services of ``scope`` (ports first, so that each may name the others'),
        adding them to ``into``; ServiceError if one fails (the caller stops ``into``).
        env: the scope's environment (default: the experiment's)."""
        c = self.context
        specs = [s for s in c.spec.model.service if s.scope == scope]
        for s in specs:
            if s.port is not None:
                self.ports[f"{s.name}_port"] = free_port() if s.port == FREE_PORT else s.port
        values = {**values, **self.ports}
        for s in specs:
            own = {**values, "port": self.ports.get(f"{s.name}_port", "")}
            service_env = {**(env if env is not None else c.step_env(None, None)), **s.env}
            base = c.request(f"service:{s.name}", render_shell(s.command, own), run_dir)
            request = dataclasses.replace(
                base, cwd=run_dir, env=c.hosts.env_for(s.on, service_env), shell=s.shell
            )
            service = ServiceRun(s.name, c.hosts[s.on], request)
            into[s.name] = service
            ready = None
            if s.ready and s.ready.startswith("cmd:"):
                ready = "cmd:" + render_shell(s.ready[4:], own)
            elif s.ready:
                ready = str(render_value(s.ready, own))
            check = self._ready_check(service, run_dir, s.on)
            service.start(ready, s.ready_timeout, check=check, stop=c.stop)

    def _ready_check(
        self, service: ServiceRun, run_dir: Path, host: str | None
    ) -> Callable[[str], bool]:
        """A ``cmd:`` readiness check: the command run on the service's host."""

        def check(command: str) -> bool:
            name = f"ready:{service.name}"
            request = self.context.request(name, command, run_dir)
            env = service.request.env
            step = self.context.step(
                name, dataclasses.replace(request, env=env, timeout=10.0), host=host
            )
            return step.ok

        return check

    def follow_variant(self, run: RunRow, scratch: Path) -> VariantServicesFailed | None:
        """Variant-scope services follow the runs: restarted when the variant changes.
        Returns why they could not start for the run's variant (its runs that follow each
        other fail with that reason, and the experiment goes on), None when they run."""
        c = self.context
        if not any(s.scope == "variant" for s in c.spec.model.service):
            return None
        if self._variant != run.variant:
            self._stop_variant_services()
            self._variant, self._failed = run.variant, None
            values = {**c.experiment_values(), **c.variants[run.variant].params}
            values["variant"] = run.variant
            env = {**c.step_env(None, None), **c.variants[run.variant].env}
            env["PERFLAB_VARIANT"] = run.variant
            try:
                self.start("variant", values, scratch, self.running, env)
            except ServiceError as e:
                self._failed = VariantServicesFailed(e.one_line(), self._stop_variant_services())
        failed = self._failed
        if failed is not None:
            self._failed = failed.again()  # its output goes with the first run only
        return failed

    def _stop_variant_services(self) -> dict[str, bytes]:
        """Stops the variant-scope services running; their output as run artifacts."""
        mine = {k: v for k, v in self.running.items() if self._is_variant(k)}
        for name in mine:
            del self.running[name]
        return stop_services(mine)

    def _is_variant(self, name: str) -> bool:
        return any(s.name == name and s.scope == "variant" for s in self.context.spec.model.service)
