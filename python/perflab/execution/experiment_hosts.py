"""The machines of an experiment: this one (``local``) and every ``[hosts.NAME]`` over SSH.

One `perflab.hosts.base.Host` per machine for the whole experiment (one SSH control master
each, opened when the experiment starts so that an unreachable host stops it before any
run, and closed at its end). Steps name their host with ``on = "NAME"``; without it they
run here. A device booted from here (``[hosts.NAME.control]``: a
`perflab.hosts.powered.PoweredHost`) is connected to at its first boot instead, and
everything staged there is staged again after every boot.

A host lent by a labgrid place (``labgrid = "PLACE"``: `perflab.hosts.labgrid`) is made
when the experiment starts, from the place acquired then (its SSH service, and its power
and console: a device booted from here); the place is released at the experiment's end,
whatever ends it (`Hosts.close`). Places are acquired in the order of their names, the
same in every perflab, so that two experiments wanting the same two never hold one each.
A pool of places (``labgrid = "router-*"`` or a list) is acquired whole here, and this
host is its first place; each other place of it is given to the `Hosts` of its device's
worker (``lease``), which makes its host from it and leaves its release to this one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.hosts.base import Host
from perflab.hosts.local import LocalHost
from perflab.hosts.powered import Control, PoweredHost
from perflab.hosts.remote import RemoteHost
from perflab.hosts.ssh import HostError, SshConnection, SshTarget, control_folder
from perflab.hosts.step import TERM_GRACE_S
from perflab.spec.template import render_shell

if TYPE_CHECKING:
    from perflab.hosts.boot import Booted
    from perflab.hosts.labgrid import Lease

LOCAL = "local"


def device_name(host: str, slot: int) -> str:
    """A device of pool ``host``, as its runs record it: ``router[1]``."""
    return f"{host}[{slot}]"


def in_slot(spec: Any, slot: int) -> Any:
    """A pool's ``[hosts.NAME]`` table as device ``slot`` of it: ``{slot}`` replaced in its
    ssh, boot and control commands (`perflab.spec.host_rules.pool_texts`)."""

    def fill(text: str | None) -> str | None:
        return None if text is None else text.replace("{slot}", str(slot))

    update: dict[str, Any] = {"ssh": fill(spec.ssh), "boot": fill(spec.boot)}
    c = spec.control
    if c is not None:
        update["control"] = c.model_copy(
            update={
                "boot": fill(c.boot),
                "power_off": fill(c.power_off),
                "console": fill(c.console),
                "counters": fill(c.counters),
            }
        )
    return spec.model_copy(update=update)


class Hosts:
    """name → host; ``local`` is always there.

    specs: the spec's ``[hosts.NAME]`` tables (`perflab.spec.host_tables.HostSpec`); workdir:
    where this machine's control commands start; values: what their templates may name
    (the spec's params); slot: which device of a pool (``pool = N``) the pool's host is
    here, ``{slot}`` in its ssh and control commands replaced by it; lease: the place of a
    pool of places that is that device (acquired and released by the runner's `Hosts`)."""

    def __init__(
        self,
        local: Host | None = None,
        specs: Mapping[str, Any] | None = None,
        *,
        workdir: Path | None = None,
        values: dict[str, Any] | None = None,
        kill_grace: float = TERM_GRACE_S,
        slot: int = 0,
        lease: Lease | None = None,
    ):
        self.local = local or LocalHost()
        self._remote: dict[str, RemoteHost] = {}
        self._devices: dict[str, PoweredHost] = {}
        self._leases: dict[str, Lease] = {}  # hosts lent by a labgrid place, once acquired
        self._owned: list[Lease] = []  # the places acquired here: released at the end
        self._lent = lease
        #: A pool's host that could not be made ready here (its device is set aside by
        #: the pool, not the experiment stopped): host name → why.
        self.unready: dict[str, HostError] = {}
        #: A pool of places acquired here: every place, its first this host's.
        self.pool_leases: list[Lease] = []
        self._control_dir: Path | None = None
        self._specs = dict(specs or {})
        self._base = workdir or Path.cwd()
        self._message: Callable[[str], None] | None = None
        self._values = dict(values or {})
        self._grace = kill_grace
        self.booted: set[str] = set()  # the hosts booted at least once, by name
        self.stop: threading.Event | None = None  # the experiment's stop request: ends a boot
        self.slot = slot
        for name, h in self._specs.items():
            if self._control_dir is None:
                self._control_dir = control_folder()
            if h.labgrid is not None or h.ssh is None:
                continue  # lent by a labgrid place: made when it is acquired (prepare)
            if h.pool is not None:  # this device of the pool, and its name in messages
                h = self._specs[name] = in_slot(h, slot)
            label = device_name(name, slot) if h.pool is not None and h.pool > 1 else name
            target = SshTarget.parse(label, h.ssh, h.identity, h.jump, tuple(h.options))
            c = h.control
            control = (
                None
                if c is None
                else Control(c.boot, c.power_off, c.console, h.boot_timeout, h.kernel, c.counters)
            )
            self._add(name, target, control)

    def _add(self, name: str, target: SshTarget, control: Control | None) -> None:
        """Host ``name`` of the spec at ``target``: a device booted from here with
        ``control``, else a host over SSH."""
        h = self._specs[name]
        conn = SshConnection(target, self._control_dir)
        if control is None:
            self._remote[name] = RemoteHost(conn, h.workdir, stage=h.stage)
            return
        device = PoweredHost(
            conn,
            control,
            local=self.local,
            workdir=self._base,
            render=render_shell,
            values=self._values,
            remote_workdir=h.workdir,
            stage=h.stage,
            kill_grace=self._grace,
        )
        self._remote[name] = self._devices[name] = device

    @property
    def names(self) -> list[str]:
        return [LOCAL, *self._remote]

    def __getitem__(self, name: str | None) -> Host:
        if name is None or name == LOCAL:
            return self.local
        return self._remote[name]

    def env_for(self, name: str | None, env: Mapping[str, str]) -> dict[str, str]:
        """A step's environment as sent to host ``name``: everything here; to a remote host
        only what perflab adds to this machine's (a host keeps its own login environment)."""
        if self[name] is self.local:
            return dict(env)
        return {k: v for k, v in env.items() if os.environ.get(k) != v}

    def remote_executor(self, name: str) -> RemoteHost:
        return self._remote[name]

    def remote(self) -> Iterable[RemoteHost]:
        return self._remote.values()

    def connection(self, name: str) -> SshConnection:
        return self._remote[name].conn

    def booted_from_here(self, name: str) -> bool:
        """Host ``name`` is a device this machine powers and boots (a `PoweredHost`)."""
        return name in self._devices

    def is_down(self, name: str) -> bool:
        """The host is known not to answer (a device not booted, or whose boot failed)."""
        return self._remote[name].conn.down is not None

    def label(self, name: str) -> str:
        """Host ``name`` as messages name it: a pool's device with its slot (``router[1]``),
        a pool of places' device by its place."""
        h = self._specs.get(name)
        if h is not None and h.places is not None and name in self._leases:
            return self._leases[name].place
        pooled = h is not None and h.pool is not None and h.pool > 1
        return device_name(name, self.slot) if pooled else name

    def devices(self, name: str) -> list[str]:
        """The devices of pool ``name``, as its runs record them: ``router[0]`` … for
        ``pool = N``, the places acquired for a pool of places."""
        h = self._specs[name]
        if h.places is not None:
            return [lease.place for lease in self.pool_leases]
        return [device_name(name, k) for k in range(h.pool or 1)]

    def lost(self, name: str) -> bool:
        """Host ``name`` is down, or is a device whose VM ended under it."""
        device = self._devices.get(name)
        return self.is_down(name) or (device is not None and device.gone())

    def revive(self) -> None:
        """Gives each host that was unreachable (not a device known down) a new chance:
        called before every run, so a host that went away costs one round of connection
        attempts per run, not one per step and read."""
        for name, ex in self._remote.items():
            if name not in self._devices and ex.conn.down is not None:
                ex.conn.down = None

    def prepare(
        self,
        base: Path | None = None,
        scratch: Path | None = None,
        message: Callable[[str], None] | None = None,
    ) -> None:
        """Connects to every remote host, stages what steps need there and copies each
        host's ``files`` (relative to ``base``) into its working directory; HostError (one
        line naming the host) for the first that cannot be used — a pool's host is left in
        `unready` instead, for the pool to set its device aside. A device booted from here
        starts its console capture (in ``scratch``) and is connected to at its first boot."""
        self._base = base or self._base
        self._message = message
        self._acquire_places()
        for name, ex in self._remote.items():
            device = self._devices.get(name)
            if device is not None:
                device.start(scratch or Path(tempfile.mkdtemp(prefix="perflab-device-")))
                continue
            try:
                self._stage(name, ex)
            except HostError as e:
                if not self._specs[name].pooled:
                    raise
                self.unready[name] = e
                ex.conn.down = ex.conn.down or e.one_line()

    def _acquire_places(self) -> None:
        """Acquires the place of every host lent by labgrid (waiting while one is held;
        HostError naming its holder after the host's labgrid_timeout) and makes its host
        from what the place lends: a device booted from here when it has a power port
        (and the host no boot command of its own), else a host over SSH."""
        lent = [n for n, h in self._specs.items() if h.labgrid is not None]
        if not lent:
            return
        for name in sorted(lent, key=lambda n: (str(self._specs[n].labgrid), n)):
            h = self._specs[name]
            lease = self._lease(name)
            self._leases[name] = lease
            options = tuple(h.options)
            label = self.label(name)
            target = SshTarget.parse(label, lease.ssh, h.identity, h.jump or lease.jump, options)
            control = None
            if lease.power is not None and h.boot is None:
                on, off = lease.power_command("on"), lease.power_command("off")
                control = Control(on, off, lease.console, h.boot_timeout, h.kernel)
            self._add(name, target, control)
        # the spec's order, as for every other host
        self._remote = {n: self._remote[n] for n in self._specs if n in self._remote}

    def _lease(self, name: str) -> Lease:
        """The place host ``name`` is: acquired here (one place, or a whole pool of
        places, this host its first), or given (a worker's device of a pool of places)."""
        from perflab.hosts.labgrid import acquire, acquire_pool, coordinator_address

        h = self._specs[name]
        if h.places is not None and self._lent is not None:
            return self._lent
        address = coordinator_address(h.labgrid_coordinator)
        if h.places is None:
            assert isinstance(h.labgrid, str)
            lease = acquire(name, h.labgrid, address, h.labgrid_timeout, self.stop, self._message)
            self._owned.append(lease)
            acquired = [lease]
        else:
            acquired = acquire_pool(
                name, h.places, h.count, h.min or 1, address, h.labgrid_timeout, self.stop,
                self._message,
            )  # fmt: skip
            self._owned += acquired
            self.pool_leases = acquired
        if self._message is not None:
            for lease in acquired:
                self._message(f"host {name}: labgrid place {lease.place} acquired ({lease.ssh})")
        return acquired[0]

    def places(self) -> dict[str, dict[str, Any]]:
        """Each host lent by a labgrid place → what the records keep of the place (its
        name, coordinator, holder and resources)."""
        return {name: lease.record() for name, lease in self._leases.items()}

    def _stage(self, name: str, ex: RemoteHost) -> None:
        ex.prepare(self._message)
        for f in self._specs[name].files:
            ex.put_file(self._base / f)

    def boot(
        self, name: str, kernel: str | None, cmdline: str | None, command: str | None = None
    ) -> Booted:
        """Boots host ``name`` into ``kernel`` (with ``cmdline``): a device from here, any
        other host by its boot command (``command``: the variant's; else the host's), then
        stages again what its steps need."""
        from perflab.hosts.boot import DEFAULT_BOOT, Booted, boot

        device = self._devices.get(name)
        ex = self._remote[name]
        if device is not None:
            state = device.boot(kernel, cmdline, self.stop)
            how = f"boot {device.boots} from here"
        else:
            template = command or self._specs[name].boot or DEFAULT_BOOT
            how = render_shell(
                template,
                {**self._values, "kernel": kernel or "", "cmdline": cmdline or "", "host": name},
            )
            state = boot(ex.conn, how, self._specs[name].boot_timeout, self.stop)
        self._stage(name, ex)
        self.booted.add(name)
        return Booted(state, how)

    def check(self) -> list[str]:
        """One line per remote host on how its steps will run (connecting to each that is
        not booted from here; HostError, naming the cause, for the first that cannot run a
        step) — what ``perflab run --dry-run`` says of the hosts."""
        lines = []
        for name, h in self._specs.items():
            if h.pool is not None and h.pool > 1:
                devices = ", ".join(self.devices(name))
                lines.append(
                    f"host {name}: a pool of {h.pool} devices ({devices}), blocks spread over "
                    "them; the first shown below"
                )
            if h.labgrid is not None:
                from perflab.hosts.labgrid import coordinator_address, look

                address = coordinator_address(h.labgrid_coordinator)
                lines.append(f"host {name}: {look(name, h.places or [h.labgrid], address)}")
                if h.places is not None:
                    lines[-1] += (
                        f"; a pool of up to {h.count or 'every one of them'}, once "
                        f"{h.min or 1} are free, blocks spread over them"
                    )
        for name, ex in self._remote.items():
            device = self._devices.get(name)
            if device is not None:
                lines.append(
                    f"host {name}: booted from here (`{device.control.boot}`), checked at its "
                    "first boot"
                )
                continue
            ex.prepare()
            how = (
                "perflab-exec"
                if ex.measurement == "perflab-exec"
                else f"the portable sh path ({ex.why_not_shim}; no max RSS)"
            )
            lines.append(f"host {name}: {ex.machine} {ex.system}, steps measured by {how}")
        return lines

    def take_consoles(self) -> dict[str, bytes]:
        """Each controlled device's console since the last take (non-empty ones)."""
        out = {}
        for name, device in self._devices.items():
            data = device.console.take()
            if data:
                out[name] = data
        return out

    def close(self) -> None:
        """Powers off the devices booted from here, closes every connection and releases
        the labgrid places acquired."""
        try:
            for device in self._devices.values():
                try:  # one device's failure spares the others, and is said
                    device.close()
                except HostError as e:
                    if self._message is not None:
                        self._message(f"{e.one_line()}; check that it is off")
        finally:
            for ex in self._remote.values():
                ex.conn.close()
            if self._control_dir is not None:
                with contextlib.suppress(OSError):
                    for p in self._control_dir.iterdir():
                        p.unlink()
                    self._control_dir.rmdir()
            self._release_places()

    def _release_places(self) -> None:
        """Releases every place acquired; what went wrong is said, one line each."""
        self._leases.clear()
        if not self._owned:
            return
        from perflab.hosts.labgrid import release

        while self._owned:
            lease = self._owned.pop()
            try:
                note = release(lease)
            except HostError as e:
                note = e.one_line()
            if note is not None and self._message is not None:
                self._message(note)
