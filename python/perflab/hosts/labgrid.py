"""Devices lent by a labgrid coordinator: ``[hosts.NAME] labgrid = "PLACE"``.

A team's lab lends its devices through labgrid *places* (a device's network service,
power and console, exported by the machines they hang off). perflab acquires the place
before the experiment's first step — waiting while someone else holds it, saying who,
for up to the host's ``labgrid_timeout`` — takes from the place's resources what it
needs, and releases the place when the experiment ends, however it ends (its end, an
error, Ctrl-C, SIGTERM). The coordinator gives a place to one holder at a time, so two
experiments that want one place never run on it at once: the second waits.

What a place lends (`Lease`):

- ``NetworkService`` (address, username, port): the SSH destination; a resource the
  exporter says needs its proxy (isolated exporters) is reached with the exporter host
  as ProxyJump;
- a power port labgrid's client can switch (``NetworkPowerPort``, ``PDUDaemonPort``,
  ...): the device is booted from here, power off then on through labgrid's power
  driver (``labgrid-client power``: the one command-line entry to it);
- ``NetworkSerialPort`` (host, port): the console, read over TCP.

Who holds a place is ``HOST/USER`` (labgrid's ``LG_HOSTNAME`` and ``LG_USERNAME``,
else this machine's name and the login name). The holder's perflab process is marked
on the acquisition itself — an entry ``HOST/perflab-pid-PID-START`` in the place's
``allowed`` list, which every release clears — so that a place left held by a perflab
killed with SIGKILL is told apart from one in use: when the holder is this user on
this host and that process is gone, the "held by" line says so and how to release it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from perflab.hosts.labgrid_session import CoordinatorError, CoordinatorSession
from perflab.hosts.process import process_start_time
from perflab.hosts.ssh import HostError, parse_destination

#: Seconds between looks at a place someone else holds (the coordinator pushes changes:
#: a look costs no request).
POLL_S = 0.25
#: The default of a host's ``labgrid_timeout``: how long to wait for a place held.
DEFAULT_TIMEOUT_S = 600.0
#: What marks an acquisition as this perflab process's (an ``allowed`` entry).
MARK = "perflab-pid-"
#: The resource classes labgrid's client switches with ``power on`` / ``power off``.
POWER_CLASSES = (
    "NetworkPowerPort",
    "PDUDaemonPort",
    "NetworkUSBPowerPort",
    "NetworkSiSPMPowerPort",
    "TasmotaPowerPort",
    "NetworkYKUSHPowerPort",
    "NetworkSysfsGPIO",
)
#: Resource parameters never recorded (a NetworkService's password).
SECRET_PARAMS = frozenset({"password"})

Message = Callable[[str], None]


def coordinator_address(configured: str | None) -> str:
    """The coordinator perflab asks: the host's ``labgrid_coordinator``, else the
    environment's ``LG_COORDINATOR`` (as labgrid-client does), else labgrid's default."""
    return configured or os.environ.get("LG_COORDINATOR") or "127.0.0.1:20408"


@dataclass(frozen=True)
class PlaceResource:
    """One resource a place lends: ``path`` ``exporter/group/cls/name``, ``name`` as the
    place names it, ``params`` its parameters (passwords left out), ``extra`` what the
    exporter adds (its proxy)."""

    path: str
    name: str
    cls: str
    params: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "cls": self.cls, "params": self.params}


@dataclass(frozen=True)
class Lease:
    """A place held for an experiment: where its device answers and how it is driven."""

    host: str  # the spec's host name
    place: str
    coordinator: str
    holder: str  # HOST/USER, as the coordinator names it
    mark: str  # the allowed entry naming this perflab process
    resources: tuple[PlaceResource, ...]
    ssh: str  # user@address:port, from the NetworkService
    jump: str | None = None  # the exporter, when the service is reached through it
    console: str | None = None  # tcp://HOST:PORT, from the NetworkSerialPort
    power: str | None = None  # the power resource's class, when the place has one

    def power_command(self, action: str) -> str:
        """The shell command switching the place's power ``on`` or ``off`` (labgrid's
        power driver, through its client, under this process's labgrid identity)."""
        argv = [sys.executable, "-m", "labgrid.remote.client", "-x", self.coordinator]
        return shlex.join([*argv, "-p", self.place, "power", action])

    def record(self) -> dict[str, Any]:
        """What the experiment's records keep of the place (JSON)."""
        return {
            "place": self.place,
            "coordinator": self.coordinator,
            "acquired_by": self.holder,
            "ssh": self.ssh,
            "console": self.console,
            "power": self.power,
            "resources": [r.to_json() for r in self.resources],
        }


def acquire(
    host: str,
    place: str,
    address: str,
    timeout: float,
    stop: threading.Event | None = None,
    message: Message | None = None,
) -> Lease:
    """Acquires ``place`` of the coordinator at ``address`` for host ``host`` of the spec,
    waiting up to ``timeout`` s while it is held (a progress line to ``message`` each time
    its holder changes); HostError (one line naming the holder) when the wait is over,
    ``stop`` is set, or the place lends no SSH service."""
    session = _open(host, address)
    try:
        _wait_for(session, host, place, timeout, stop, message)
        return _lend(session, host, [place])[0]
    except CoordinatorError as e:
        raise HostError(f"host '{host}': {e}") from None
    finally:
        session.close()


def acquire_pool(
    host: str,
    patterns: list[str],
    count: int | None,
    least: int,
    address: str,
    timeout: float,
    stop: threading.Event | None = None,
    message: Message | None = None,
) -> list[Lease]:
    """Acquires a pool of places for host ``host`` of the spec: of the coordinator's
    places that ``patterns`` name (names, or shell patterns such as ``router-*``), in the
    order of their names, at most ``count`` (all when None) of those free, once at least
    ``least`` are free at once; waiting up to ``timeout`` s meanwhile (a progress line to
    ``message`` each time what it waits for changes). Places are taken only when enough
    are free, so two experiments waiting for the same places never hold some each and
    wait for each other. HostError (one line naming the holders) when the wait is over,
    ``stop`` is set, or no place matches."""
    session = _open(host, address)
    said = ", ".join(patterns)

    def attempt() -> list[str] | str:
        names = _matching(session, host, patterns)
        taken = _take(session, names, count if count is not None else len(names))
        if len(taken) >= least:
            return taken
        for name in taken:  # not enough at once: held by none while waiting
            with contextlib.suppress(CoordinatorError):
                session.release(name, session.who)
        session.sync()
        held = "; ".join(
            f"{n} {holder_line(session, session.place(n))}"
            for n in names
            if session.place(n).acquired
        )
        return f"{len(taken)} of {len(names)} free, {least} wanted" + (f" ({held})" if held else "")

    try:
        taken = _poll(
            session, host, f"labgrid places {said}", timeout, stop, message, attempt,
            error=lambda why: f"labgrid places {said}: {why}",
            progress=lambda why: f"waiting for labgrid places {said}: {why}",
        )  # fmt: skip
        return _lend(session, host, taken)
    except CoordinatorError as e:
        raise HostError(f"host '{host}': {e}") from None
    finally:
        session.close()


def _matching(session: CoordinatorSession, host: str, patterns: list[str]) -> list[str]:
    """The coordinator's places that ``patterns`` name, sorted; HostError when a name
    or pattern matches none."""
    known = session.place_names()
    names: set[str] = set()
    for pattern in patterns:
        found = fnmatch.filter(known, pattern)
        if not found:
            what = f"matches '{pattern}'" if any(c in pattern for c in "*?[") else f"'{pattern}'"
            raise HostError(
                f"host '{host}': no labgrid place {what} on the coordinator "
                f"{session.address} (places: {', '.join(known) or 'none'})"
            )
        names.update(found)
    return sorted(names)


def _take(session: CoordinatorSession, names: list[str], count: int) -> list[str]:
    """Acquires up to ``count`` of the places ``names`` that are free, in their order."""
    taken: list[str] = []
    for name in names:
        if len(taken) == count:
            break
        if not session.place(name).acquired and session.acquire(name) is None:
            taken.append(name)
    return taken


def _lend(session: CoordinatorSession, host: str, taken: list[str]) -> list[Lease]:
    """Marks every place ``taken`` as this perflab's and makes its lease; a place acquired
    and not usable is given back at once, with the others (HostError)."""
    mark = f"{session.who.partition('/')[0]}/{MARK}{os.getpid()}-{_start_time()}"
    try:
        leases = []
        for name in taken:
            session.allow(name, mark)
            leases.append(_lease(session, host, session.place(name), mark))
        return leases
    except BaseException:
        for name in taken:
            with contextlib.suppress(CoordinatorError):
                session.release(name, session.who)
        raise


def release(lease: Lease) -> str | None:
    """Releases the place if this perflab still holds it; a line saying what was off when
    it did not (kicked by someone, released by hand), else None. HostError (saying how to
    release it by hand) when the coordinator cannot be asked."""
    by_hand = f"`labgrid-client -x {lease.coordinator} -p {lease.place} release`"
    try:
        session = CoordinatorSession(lease.coordinator)
    except CoordinatorError as e:
        raise HostError(
            f"host '{lease.host}': labgrid place '{lease.place}' not released: {e}; "
            f"release it with {by_hand}"
        ) from None
    try:
        state = session.place(lease.place)
        if state.acquired != lease.holder or lease.mark not in state.allowed:
            return (
                f"host '{lease.host}': labgrid place '{lease.place}' was no longer held by this "
                f"perflab ({holder_line(session, state)}): left as it is"
            )
        session.release(lease.place, lease.holder)
        return None
    except CoordinatorError as e:
        raise HostError(
            f"host '{lease.host}': labgrid place '{lease.place}' not released: {e}; "
            f"release it with {by_hand}"
        ) from None
    finally:
        session.close()


def look(host: str, patterns: list[str], address: str) -> str:
    """What ``--dry-run`` says of the places ``patterns`` name (one place, or a pool's
    names and patterns): who holds each and what it lends (none acquired)."""
    session = _open(host, address)
    try:
        said = []
        names = _matching(session, host, patterns)
        for name in names:
            state = session.place(name)
            lends = (
                ", ".join(f"{entry.cls} {n}" for _, n, entry in session.resources(state))
                or "no resources (is its exporter running?)"
            )
            held = holder_line(session, state) if state.acquired else "free"
            said.append(f"labgrid place '{name}' on {session.address}: {held}; lends {lends}")
        return "; ".join(said)
    except CoordinatorError as e:
        raise HostError(f"host '{host}': {e}") from None
    finally:
        session.close()


def _open(host: str, address: str) -> CoordinatorSession:
    try:
        return CoordinatorSession(address)
    except (CoordinatorError, ValueError) as e:
        raise HostError(
            f"host '{host}': {e}", hint="labgrid_coordinator = HOST:PORT, or LG_COORDINATOR"
        ) from None


def _wait_for(
    session: CoordinatorSession,
    host: str,
    place: str,
    timeout: float,
    stop: threading.Event | None,
    message: Message | None,
) -> None:
    """Acquires the place, waiting while it is held (a line each time its holder
    changes); HostError at the deadline or on the stop request."""

    def attempt() -> bool | str:
        state, refused = session.place(place), None
        if not state.acquired:
            refused = session.acquire(place)
            if refused is None:
                return True
            session.sync()  # who took it first, if that is why
            state = session.place(place)
        return holder_line(session, state) if state.acquired else f"not free: {refused}"

    _poll(
        session, host, f"labgrid place '{place}'", timeout, stop, message, attempt,
        error=lambda why: f"labgrid place '{place}' is {why}",
        progress=lambda why: f"waiting for labgrid place {place} ({why})",
    )  # fmt: skip


T = TypeVar("T")


def _poll(
    session: CoordinatorSession,
    host: str,
    what: str,
    timeout: float,
    stop: threading.Event | None,
    message: Message | None,
    attempt: Callable[[], T | str],
    *,
    error: Callable[[str], str],
    progress: Callable[[str], str],
) -> T:
    """``attempt()`` until it returns what it waited for (not a ``str``: why it must wait
    on), up to ``timeout`` s, letting the coordinator's updates arrive between tries: a
    ``progress`` line to ``message`` each time the why changes; HostError with the
    ``error`` line at the deadline, or on the ``stop`` request."""
    deadline = time.monotonic() + timeout
    told: str | None = None
    while True:
        if stop is not None and stop.is_set():
            raise HostError(f"host '{host}': stopped while waiting for {what}")
        got = attempt()
        if not isinstance(got, str):
            return got
        if time.monotonic() >= deadline:
            raise HostError(f"host '{host}': {error(got)}; waited {timeout:g} s (labgrid_timeout)")
        if got != told and message is not None:
            message(f"{progress(got)}, up to {timeout:g} s")
        told = got
        session.wait(min(POLL_S, max(0.0, deadline - time.monotonic())))


def holder_line(session: CoordinatorSession, state: Any) -> str:
    """``held by USER@HOST since TIME`` and, when the holder is this user on this host,
    whether the perflab that acquired it still runs (a stale lock says how to release)."""
    if not state.acquired:
        return "free"
    holder_host, _, user = str(state.acquired).partition("/")
    since = datetime.fromtimestamp(state.changed)
    when = since.strftime("%H:%M:%S" if since.date() == datetime.now().date() else "%Y-%m-%d %H:%M")
    line = f"held by {user}@{holder_host} since {when}"
    marks = [a for a in state.allowed if str(a).partition("/")[2].startswith(MARK)]
    pid, start = _marked_process(marks[0]) if marks else (None, None)
    if state.acquired != session.who:
        return line + (", by perflab" if marks else "")
    by_hand = f"`labgrid-client -x {session.address} -p {state.name} release`"
    if pid is None:
        return (
            f"{line}: that is you on this host, not through a running perflab; release it "
            f"with {by_hand} once nothing of yours uses it"
        )
    if start is not None and process_start_time(pid) == start:
        return f"{line}, by perflab pid {pid} on this host"
    return (
        f"{line}, by perflab pid {pid} on this host, which is gone: a lock left by a perflab "
        f"killed with SIGKILL; release it with {by_hand}"
    )


def _marked_process(entry: str) -> tuple[int | None, str | None]:
    """(pid, kernel start time) of a mark ``HOST/perflab-pid-PID-START``."""
    pid_text, _, start = entry.partition("/")[2].removeprefix(MARK).partition("-")
    return (int(pid_text), start or None) if pid_text.isdigit() else (None, None)


def _start_time() -> str:
    return process_start_time(os.getpid()) or "0"


def _lease(session: CoordinatorSession, host: str, state: Any, mark: str) -> Lease:
    """The lease of a place just acquired: its resources, the SSH destination from its
    NetworkService; HostError when it lends none."""
    resources = tuple(
        PlaceResource(
            path,
            name,
            entry.cls,
            {k: v for k, v in entry.args.items() if k not in SECRET_PARAMS},
            dict(entry.extra),
        )
        for path, name, entry in session.resources(state)
    )
    services = [r for r in resources if r.cls == "NetworkService"]
    if not services:
        lent = ", ".join(r.path for r in resources) or "nothing"
        raise HostError(
            f"host '{host}': labgrid place '{state.name}' lends no NetworkService (it lends "
            f"{lent}): perflab reaches a device over SSH; is its exporter running?"
        )
    service = services[0]
    p = service.params
    address = str(p.get("address", ""))
    address = f"[{address}]" if ":" in address else address  # IPv6
    ssh = f"{p.get('username')}@{address}:{p.get('port', 22)}"
    try:
        parse_destination(ssh)
    except ValueError as e:
        raise HostError(
            f"host '{host}': labgrid place '{state.name}' lends NetworkService {service.path} "
            f"that perflab cannot log in to over SSH: {e}"
        ) from None
    jump = str(service.extra.get("proxy")) if service.extra.get("proxy_required") else None
    console = None
    serial = [r for r in resources if r.cls == "NetworkSerialPort"]
    if serial and not serial[0].extra.get("proxy_required"):
        s = serial[0].params
        where = f"[{s['host']}]" if ":" in str(s["host"]) else s["host"]
        console = f"tcp://{where}:{s['port']}"
    power = next((r.cls for r in resources if r.cls in POWER_CLASSES), None)
    return Lease(
        host, state.name, session.address, session.who, mark, resources, ssh, jump, console, power
    )
