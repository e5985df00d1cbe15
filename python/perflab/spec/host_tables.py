"""The ``[hosts.NAME]`` tables of the experiment file: a machine reached over SSH, a
device booted from here (``[hosts.NAME.control]``), a labgrid place, a pool of devices
(``pool = N``) or of places. Their cross-field rules are in `host_rules.py`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from perflab.spec.types import (
    Bool,
    Command,
    Destination,
    Duration,
    Short,
    Strict,
    WholeNumber,
)


class ControlSpec(Strict):
    """``[hosts.NAME.control]``: a device booted, reset and watched from outside (a VM, a
    board behind a power switch and a serial console). These commands run on this
    machine, the controller, never on the device.

    ``boot`` starts the device into ``{kernel}`` with ``{cmdline}`` added to its command
    line (values quoted): a VM started in the foreground is held running until the next
    boot or the experiment's end; a command that only switches power on may exit.
    ``power_off`` runs before every boot and at the end (default: the boot command's
    processes are stopped). ``console``: ``tcp://HOST:PORT`` (connected to from here), a
    file or serial device path, or ``cmd:COMMAND`` whose output is the console; default:
    the boot command's own output. Every boot's console is kept with the run.
    ``counters``: a command that prints ``EVENT COUNT`` lines, the device's counts that
    its own software cannot take (an emulator's count of the guest's instructions); run
    before and after each phase whose ``counters_on`` names this host, the difference is
    the phase's count."""

    boot: Command
    power_off: Command | None = None
    console: Short | None = None
    counters: Command | None = None


class HostSpec(Strict):
    """One `[hosts.NAME]`: a machine reached over SSH (`local`, this one, is implicit).

    ``ssh`` is ``user@address:port``, ``address`` or an alias of ``~/.ssh/config`` (which
    is honoured: ProxyJump, identities, known hosts); ``identity`` a private key file;
    ``jump`` a ProxyJump destination; ``options`` extra ssh ``-o`` options such as
    ``"StrictHostKeyChecking=accept-new"``; ``workdir`` where commands start there
    (default: the login directory). Any CPU architecture with a POSIX shell will do:
    where perflab's measurement shim cannot run (or ``stage = false``), steps are
    measured by a portable sh path.

    ``labgrid = "PLACE"`` instead of ``ssh``: a device lent by a labgrid coordinator
    (``labgrid_coordinator = "HOST:PORT"``, else ``LG_COORDINATOR``), acquired for the
    experiment (waiting up to ``labgrid_timeout`` while someone holds it) and released at
    its end; its SSH address, power and console come from the place's resources.
    ``pool = N``: N identical devices, ``{slot}`` (0 … N−1) in ssh and the control and
    boot commands naming each; blocks are spread over them (execution/pool.py). A pool
    of places: ``labgrid = "router-*"`` (a pattern) or a list of places, with ``count``
    (at most this many) and ``min`` (wait until this many are free at once)."""

    ssh: Destination | None = None
    pool: Annotated[WholeNumber, Field(ge=1, le=64)] | None = None
    # a place of a labgrid coordinator (instead of ssh); a pattern or a list: a pool of places
    labgrid: Short | Annotated[list[Short], Field(min_length=1, max_length=64)] | None = None
    labgrid_coordinator: Short | None = None  # HOST:PORT; default: $LG_COORDINATOR
    labgrid_timeout: Duration = 600.0  # how long to wait for the place while it is held
    count: Annotated[WholeNumber, Field(ge=1, le=64)] | None = None  # at most this many places
    min: Annotated[WholeNumber, Field(ge=1, le=64)] | None = None  # wait until this many are free
    identity: Short | None = None
    jump: Short | None = None
    options: Annotated[list[Short], Field(max_length=100)] = []
    workdir: Short | None = None
    # local files (relative to the spec's workdir) copied to the host's workdir under their
    # own names before the first run and after every boot: a script, a program, a config
    files: Annotated[list[Short], Field(max_length=100)] = []
    # stage perflab's helper programs there (its measurement shim); false: nothing is
    # copied and steps are measured by the portable sh path
    stage: Bool = True
    # how to boot it into a variant's kernel: a reboot or kexec command, run on the host
    # (`{kernel}` is the kernel wanted, `{cmdline}` the variant's cmdline); default: "reboot"
    boot: Command | None = None
    # a device booted from this machine instead (power, boot into a kernel, console)
    control: ControlSpec | None = None
    # the kernel a controlled device boots when the run's variant names none
    kernel: Short | None = None
    boot_timeout: Duration = 600.0  # from the boot command to the host answering again
    reset: Literal["never", "each-run"] = "never"  # "each-run": a fresh boot before every run

    @property
    def places(self) -> list[str] | None:
        """A pool of labgrid places (``labgrid`` a list, or a pattern): its names and
        patterns; None for one place or none."""
        lg = self.labgrid
        if isinstance(lg, list):
            return list(lg)
        return [lg] if lg is not None and any(c in lg for c in "*?[") else None

    @property
    def pooled(self) -> bool:
        """The host is a pool of devices: ``pool = N`` or a pool of labgrid places."""
        return self.pool is not None or self.places is not None
