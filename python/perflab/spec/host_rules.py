"""Rules for [hosts] and ``on``: where each command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.spec.name_rules import choices_hint
from perflab.spec.param_names import HOOKS
from perflab.spec.phase_kinds import kind_of
from perflab.spec.schema import FREE_PORT

if TYPE_CHECKING:
    from perflab.spec.experiment_file import Spec
    from perflab.spec.locate import Path as KeyPath


def check_hosts(spec: Spec) -> None:
    """Every `on` names a host of [hosts] (or `local`); what runs elsewhere can."""
    m = spec.model
    known = ["local", *m.hosts]
    if "local" in m.hosts:
        raise spec.error(("hosts", "local"), "'local' is this machine; name the host otherwise")
    places: list[tuple[KeyPath, str | None]] = [
        ((name, "on"), getattr(m, name).on) for name in HOOKS if getattr(m, name)
    ]
    places += [(("variant", i, "on"), v.on) for i, v in enumerate(m.variant)]
    for i, p in enumerate(m.phase):
        ons = p.on if isinstance(p.on, list) else [p.on]
        places += [(("phase", i, "on"), on) for on in ons]
    places += [(("service", i, "on"), s.on) for i, s in enumerate(m.service)]
    for loc, on in places:
        if on is not None and on not in known:
            raise spec.error(
                loc,
                f"unknown host '{on}'",
                hint=choices_hint(on, known) + " (hosts are [hosts.NAME])",
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
        if v.build and not v.kernel:
            raise spec.error(
                ("variant", i, "build"),
                f"variant '{v.name}' has a build but no kernel: build runs here before its "
                "host boots into the kernel it names (build anything else in setup or "
                "before_all)",
            )
    for i in range(len(m.phase)):
        _check_phase_place(spec, i)
        if m.phase[i].fetch and not kind_of(m.phase[i]).runs_command:
            raise spec.error(("phase", i, "fetch"), "fetch keeps files a command phase leaves")
    for name, h in m.hosts.items():
        _check_host_files(spec, name, h.files)
        _check_lent_host(spec, name)
        _check_pool(spec, name)
        if h.control is not None and h.boot is not None:
            raise spec.error(
                ("hosts", name, "boot"),
                f"host '{name}' has both boot (run on the device) and [hosts.{name}.control] "
                "(run here): give the boot command in one of them",
            )
    for i in range(len(m.service)):
        _check_remote_service(spec, i)


def _check_lent_host(spec: Spec, name: str) -> None:
    """A host is reached at ``ssh``, or lent by a labgrid place (``labgrid``): one of
    them; a place lends its power and console, and is lent to one host."""
    from perflab.hosts.labgrid_session import split_address

    m = spec.model
    h = m.hosts[name]
    if h.labgrid is None:
        if h.ssh is None:
            raise spec.error(
                ("hosts", name),
                f"host '{name}' says neither where it is (ssh = \"user@address:port\") nor "
                'which labgrid place lends it (labgrid = "PLACE")',
            )
        for key in ("labgrid_coordinator", "labgrid_timeout", "count", "min"):
            if key in h.model_fields_set:
                raise spec.error(("hosts", name, key), f'{key} is for labgrid = "PLACE"')
        return
    names = h.labgrid if isinstance(h.labgrid, list) else [h.labgrid]
    for i, place in enumerate(names):
        if not place.strip():
            loc: KeyPath = ("hosts", name, "labgrid")
            raise spec.error(
                (*loc, i) if isinstance(h.labgrid, list) else loc,
                "labgrid names a place: it is empty",
            )
    _check_places_pool(spec, name)
    if h.ssh is not None:
        raise spec.error(
            ("hosts", name, "ssh"),
            f"host '{name}' has both ssh and labgrid: the place lends its SSH address "
            "(keep identity and options for logging in); leave ssh out",
        )
    if h.control is not None:
        raise spec.error(
            ("hosts", name, "control"),
            f"host '{name}' is lent by labgrid place '{h.labgrid}', whose resources give its "
            f"power and console: leave [hosts.{name}.control] out",
        )
    if h.labgrid_coordinator is not None:
        try:
            split_address(h.labgrid_coordinator)
        except ValueError as e:
            raise spec.error(("hosts", name, "labgrid_coordinator"), str(e)) from None
    for other, o in m.hosts.items():
        if other == name:
            break
        if o.labgrid == h.labgrid and o.labgrid_coordinator == h.labgrid_coordinator:
            raise spec.error(
                ("hosts", name, "labgrid"),
                f"hosts '{other}' and '{name}' are both labgrid place {_said(h.labgrid)}: a "
                "place is one device; give it one [hosts.NAME] table",
            )


def _said(labgrid: str | list[str] | None) -> str:
    """A host's ``labgrid`` as a message quotes it."""
    return ", ".join(f"'{p}'" for p in labgrid) if isinstance(labgrid, list) else f"'{labgrid}'"


def _check_places_pool(spec: Spec, name: str) -> None:
    """``count`` and ``min`` size a pool of places (``labgrid`` a pattern or a list):
    at most ``count`` places, at least ``min`` free at once; ``min`` ≤ ``count``, and a
    list of places no shorter than ``min``."""
    h = spec.model.hosts[name]
    if h.places is None:
        for key in ("count", "min"):
            if key in h.model_fields_set:
                raise spec.error(
                    ("hosts", name, key),
                    f"{key} sizes a pool of places, and labgrid = '{h.labgrid}' is one place: "
                    'name several (labgrid = ["router-1", "router-2"]) or a pattern ("router-*")',
                )
        return
    if h.count is not None and h.min is not None and h.min > h.count:
        raise spec.error(
            ("hosts", name, "min"),
            f"min = {h.min} is more than count = {h.count}: the pool waits for at least min "
            "places and takes at most count",
        )
    literal = isinstance(h.labgrid, list) and not any(c in p for p in h.labgrid for c in "*?[")
    if literal and h.min is not None and isinstance(h.labgrid, list) and h.min > len(h.labgrid):
        raise spec.error(
            ("hosts", name, "min"),
            f"min = {h.min}, and labgrid names {len(h.labgrid)} places: the pool would wait "
            "for ever",
        )


#: What a pool's table names its device by.
SLOT = "{slot}"


def pool_texts(spec: Spec, name: str) -> list[tuple[KeyPath, str]]:
    """The keys of ``[hosts.NAME]`` where ``{slot}`` may name a pool's device: its ssh
    destination and the commands that boot, power off, watch and count it."""
    h = spec.model.hosts[name]
    out: list[tuple[KeyPath, str]] = []
    if h.ssh is not None:
        out.append((("hosts", name, "ssh"), h.ssh))
    if h.boot is not None:
        out.append((("hosts", name, "boot"), h.boot))
    if h.control is not None:
        c = h.control
        for key, text in (
            ("boot", c.boot),
            ("power_off", c.power_off),
            ("console", c.console),
            ("counters", c.counters),
        ):
            if text is not None:
                out.append((("hosts", name, "control", key), text))
    return out


def _check_pool(spec: Spec, name: str) -> None:
    """``pool = N``: N devices told apart by ``{slot}`` in ssh (and in the control commands
    of devices booted from here); ``{slot}`` only in a pool; one pool per experiment, and
    no other device booted from here (each block running side by side would boot it)."""
    m = spec.model
    h = m.hosts[name]
    texts = pool_texts(spec, name)
    if not h.pooled:
        for loc, text in texts:
            if SLOT in text:
                raise spec.error(
                    loc, f"{SLOT} names a device of a pool: set pool = N in [hosts.{name}]"
                )
        return
    where = ("hosts", name, "pool" if h.pool is not None else "labgrid")
    if h.pool is not None and h.labgrid is not None:
        raise spec.error(
            where,
            f"host '{name}' is lent by labgrid {_said(h.labgrid)}: leave pool out (a pool of "
            'places is labgrid = "router-*" or a list of places, with count = N)',
        )
    others = [o for o, oh in m.hosts.items() if o != name and oh.pooled]
    if others:
        raise spec.error(
            where,
            f"hosts '{others[0]}' and '{name}' are both pools: an experiment spreads its "
            "blocks over one pool",
        )
    booted = [o for o, oh in m.hosts.items() if o != name and oh.control is not None]
    if booted and (h.pool is None or h.pool > 1):
        raise spec.error(
            where,
            f"the pool's blocks run side by side, and each would boot device '{booted[0]}' "
            f"as well: make it part of the pool, or leave out [hosts.{booted[0]}.control]",
        )
    if h.pool is None or h.pool == 1:
        return
    needs = [
        (loc, text) for loc, text in texts if loc[-1] == "ssh" or loc[2:] == ("control", "boot")
    ]
    for loc, text in needs:
        if SLOT not in text:
            key = ".".join(str(k) for k in loc)
            raise spec.error(
                loc,
                f"the {h.pool} devices of pool '{name}' are told apart by {SLOT}: name it in "
                f'{key} (e.g. ssh = "root@127.0.0.1:2223{SLOT}" and --ssh-port 2223{SLOT})',
            )


def _check_host_files(spec: Spec, host: str, files: list[str]) -> None:
    """A host's ``files`` exist here (relative to the spec's workdir), once per name."""
    seen: dict[str, str] = {}
    for f in files:
        path = spec.workdir / f
        if not path.is_file():
            raise spec.error(("hosts", host, "files"), f"no such file: {path}")
        if path.name in seen:
            raise spec.error(
                ("hosts", host, "files"),
                f"'{f}' and '{seen[path.name]}' would both be {path.name} on '{host}'",
            )
        seen[path.name] = f


def _check_remote_service(spec: Spec, i: int) -> None:
    """A service on another host: its port must be known, and it must be seen ready from
    here (a TCP connection) or there (a command)."""
    s = spec.model.service[i]
    if s.on in (None, "local"):
        return
    _check_service_outlives_no_boot(spec, i)
    if s.port == FREE_PORT:
        raise spec.error(
            ("service", i, "port"),
            f"{{free_port}} finds a port free on this machine, and service '{s.name}' runs on "
            f"'{s.on}': give the port it listens on there",
        )
    if s.ready and s.ready.startswith(("log:", "unix://")):
        raise spec.error(
            ("service", i, "ready"),
            f"service '{s.name}' runs on '{s.on}', where its output and sockets are not seen "
            "from here: use tcp://HOST:PORT (connected to from this machine) or cmd:COMMAND "
            "(run on that host)",
        )


def _check_service_outlives_no_boot(spec: Spec, i: int) -> None:
    """A service must not span a boot of its host: perflab boots a device booted from here
    before its first run, a host with ``reset = "each-run"`` before every run, and a kernel
    variant's host at each change of kernel."""
    m = spec.model
    s = m.service[i]
    h = m.hosts.get(s.on or "")
    if h is None:
        return
    kernels = any(v.on == s.on and (v.kernel or v.cmdline) for v in m.variant)
    if s.scope == "experiment" and (h.control is not None or h.reset == "each-run" or kernels):
        why = "boots during the experiment"
    elif s.scope == "variant" and h.reset == "each-run":
        why = 'is booted before every run (reset = "each-run")'
    else:
        return
    raise spec.error(
        ("service", i, "scope"),
        f"service '{s.name}' (scope {s.scope}) runs on '{s.on}', which perflab {why}: "
        'a boot would end it; use scope = "run"',
    )


def _check_phase_place(spec: Spec, i: int) -> None:
    """A command phase runs on one host; a kv phase's load comes from one process per host
    listed (``processes`` each); probes run here."""
    p = spec.model.phase[i]
    kind = kind_of(p)
    if p.processes != 1 and not kind.spreads_over_hosts:
        raise spec.error(
            ("phase", i, "processes"), "processes is for kv phases (load processes per host)"
        )
    if isinstance(p.on, list):
        if not kind.spreads_over_hosts:
            raise spec.error(
                ("phase", i, "on"),
                "a list of hosts is for kv phases (one load process on each); "
                'a command phase runs on one host: on = "NAME"',
            )
        if not p.on:
            raise spec.error(("phase", i, "on"), "on = [] names no host: list the load's hosts")
        if len(set(p.on)) != len(p.on):
            raise spec.error(
                ("phase", i, "on"),
                "a host is listed twice: for several load processes on one host, set processes",
            )
    if p.on in (None, "local"):
        return
    if kind.here_only:
        raise spec.error(("phase", i, "on"), f"{kind.key} phases run on this machine")
    if p.cores is not None:
        raise spec.error(
            ("phase", i, "cores"),
            f"cores are picked on this machine, and phase '{p.name}' runs on {p.on!r}: "
            + (
                "pin it there with taskset in its command"
                if kind.runs_command
                else "leave cores out"
            ),
        )
