"""The SSH transport to a host: OpenSSH's own client, one control master per host.

Why the OpenSSH client rather than a Python SSH library: it honours ``~/.ssh/config``
exactly as the user's own ``ssh`` does (aliases, ProxyJump, identities, the agent,
known hosts), which is what people who drive lab machines over SSH already rely on. A
control master (``ControlMaster=auto``) makes every command after the first reuse one
authenticated connection: a few milliseconds per command instead of a handshake.

Host keys are checked as the user's configuration says (``BatchMode=yes``: never a
prompt); an unknown host is a one-line error that says how to accept its key.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from perflab.errors import StoppedError
from perflab.hosts.base import output_tail

#: Attempts to (re)connect before a host is declared unreachable, and the first pause
#: between them (doubled after each failure: 0.5, 1, 2, 4 s).
CONNECT_ATTEMPTS = 5
CONNECT_BACKOFF_S = 0.5
#: ssh's exit status for its own errors (connection refused, lost, authentication).
SSH_ERROR = 255


_DESTINATION = re.compile(
    r"^(?:(?P<user>[^@\s:]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@\s:\[\]]+))"
    r"(?::(?P<port>\d{1,5}))?$"
)


class Destination(NamedTuple):
    """An ssh destination taken apart: its user and port when it names them."""

    user: str | None
    address: str
    port: int | None


def parse_destination(text: str) -> Destination:
    """(user, address, port) of an ssh destination ``user@address:port`` (``[::1]:22`` for
    IPv6; every part but the address optional; an ``~/.ssh/config`` alias is an address).
    Raises ValueError saying what is wrong."""
    m = _DESTINATION.match(text.strip())
    if not m:
        raise ValueError(
            f"bad ssh destination {text!r}: expected user@address:port, address, or an "
            "alias of ~/.ssh/config ([::1]:22 for an IPv6 address)"
        )
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"bad port {port} in ssh destination {text!r}")
    return Destination(m["user"], m["v6"] or m["host"], port)


class HostError(StoppedError):
    """A host cannot be reached or used; the message is one line naming the host."""


class _Unreachable(HostError):
    """One failed attempt to connect; ``permanent``: retrying will not help."""

    def __init__(self, message: str, *, hint: str | None, permanent: bool) -> None:
        super().__init__(message, hint=hint)
        self.permanent = permanent


@dataclass(frozen=True)
class SshTarget:
    """Where a host is and how to log in (a spec's ``[hosts.NAME]``).

    destination: ``user@address`` or an alias of ``~/.ssh/config`` (passed to ssh as is);
    port: None for ssh's default (or the config's); identity: a private key file;
    jump: a ProxyJump destination; options: extra ``-o Key=value`` options for ssh.
    """

    name: str
    destination: str
    port: int | None = None
    identity: str | None = None
    jump: str | None = None
    options: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        name: str,
        ssh: str,
        identity: str | None = None,
        jump: str | None = None,
        options: tuple[str, ...] = (),
    ) -> SshTarget:
        """From ``ssh = "user@address:port"`` (``[::1]:2222`` for IPv6; every part but the
        address optional). Raises ValueError saying what is wrong."""
        user, address, port = parse_destination(ssh)
        destination = f"{user}@{address}" if user else address
        return cls(name, destination, port, identity, jump, tuple(options))

    def describe(self) -> str:
        """``name (user@address:port)`` for messages."""
        where = self.destination + (f":{self.port}" if self.port else "")
        return f"'{self.name}' ({where})"


#: A perflab's folder of control sockets: ``/tmp/perflab-ssh-PID-START-RANDOM`` — whose it is
#: (the process id and its kernel start time), so that the next perflab can tell a folder of
#: one killed outright (its control masters still running) from one of a perflab running.
CONTROL_PREFIX = "perflab-ssh-"


def control_folder() -> Path:
    """A new folder for this process's control sockets (short: a socket path has ~108
    bytes), after sweeping the folders of perflabs that are gone (`sweep_control_folders`)."""
    from perflab.hosts.process import process_start_time

    sweep_control_folders()
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{CONTROL_PREFIX}{pid}-{process_start_time(pid)}-"))


def sweep_control_folders(root: Path | None = None) -> list[Path]:
    """Ends the control masters a perflab killed outright left (``ssh -O exit`` on each of
    its sockets: the master and its connection go) and removes its folder. Folders of a
    perflab still running are left alone. Returns the folders removed."""
    from perflab.hosts.process import process_start_time

    root = root or Path(tempfile.gettempdir())
    removed = []
    for folder in root.glob(f"{CONTROL_PREFIX}*"):
        owner = folder.name.removeprefix(CONTROL_PREFIX).split("-")
        if len(owner) < 3 or not owner[0].isdigit():
            continue  # not named by its owner: not ours to judge
        if process_start_time(int(owner[0])) == owner[1]:
            continue  # its perflab is running
        for sock in folder.glob("*.sock"):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "perflab-stale-master"],
                    check=False, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
                )  # fmt: skip
        if _remove_folder(folder):
            removed.append(folder)
    return removed


def _remove_folder(folder: Path) -> bool:
    """Removes a control folder and its sockets; False where it could not. A master told
    to exit removes its own socket, maybe while this lists the folder."""
    try:
        for p in folder.iterdir():
            p.unlink(missing_ok=True)
        folder.rmdir()
    except OSError:
        return False
    return True


class SshConnection:
    """Commands on one host over a shared control master; ``close()`` ends the master."""

    def __init__(self, host: SshTarget, control_dir: Path | None = None) -> None:
        self.host = host
        self._own_dir = control_dir is None
        # Unix socket paths are limited to ~108 bytes: a short directory, a short name.
        self.control_dir = control_dir or control_folder()
        digest = hashlib.sha1(host.name.encode()).hexdigest()[:10]
        self.control_path = self.control_dir / f"{digest}.sock"
        self.connected = False
        # Why the host is known not to answer (a boot that failed), or None: while set,
        # every command fails at once instead of waiting for a dead device to time out.
        self.down: str | None = None

    def ssh_argv(self) -> list[str]:
        """ssh and its options up to and including the destination."""
        h = self.host
        argv = [
            "ssh",
            "-o", "BatchMode=yes",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self.control_path}",
            "-o", "ControlPersist=60",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
            "-o", "ConnectTimeout=10",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip
        if h.port:
            argv += ["-p", str(h.port)]
        if h.identity:
            argv += ["-i", str(Path(h.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
        if h.jump:
            argv += ["-J", h.jump]
        for opt in h.options:
            argv += ["-o", opt]
        return [*argv, h.destination]

    def argv(self, script: str) -> list[str]:
        """The argv that runs the shell ``script`` on the host (its login shell's ``sh -c``)."""
        return [*self.ssh_argv(), "--", script]

    def connect(self) -> None:
        """Opens (or re-opens) the control master, retrying with backoff; HostError when the
        host stays unreachable."""
        pause = CONNECT_BACKOFF_S
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                self.connect_once()
                return
            except _Unreachable as e:
                error = e
                if e.permanent:
                    break  # a refused key or an unknown host does not get better by waiting
            if attempt < CONNECT_ATTEMPTS - 1:
                time.sleep(pause)
                pause *= 2
        # Down until someone revives it: the steps and reads that follow fail at once instead
        # of each waiting out the same attempts on a host that is gone.
        self.down = f"unreachable ({error.message.rsplit(': ', 1)[-1]})"
        raise HostError(error.message, hint=error.hint) from None

    def connect_once(self, timeout: float = 30.0) -> None:
        """One attempt to open the control master, of at most ``timeout`` seconds; HostError
        (one line) if it fails."""
        try:
            done = subprocess.run(
                self.argv("true"),
                check=False,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=max(0.5, timeout),
            )
        except subprocess.TimeoutExpired:
            why, status = f"no answer in {max(0.5, timeout):g} s", SSH_ERROR
        else:
            if done.returncode == 0:
                self.connected = True
                return
            why = output_tail(done.stderr) or f"ssh exited with status {done.returncode}"
            status = done.returncode
        raise _Unreachable(
            f"host {self.host.describe()}: cannot connect: {why}",
            hint=_advice(why),
            permanent=status != SSH_ERROR or _permanent(why),
        )

    def run(
        self,
        script: str,
        *,
        input: bytes | None = None,
        timeout: float | None = 60.0,
        check: bool = True,
        retry: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        """Runs ``script`` and returns its output; a lost connection is re-opened once when
        ``retry`` (for commands that may run twice). check: HostError unless status 0."""
        if self.down is not None:
            raise HostError(f"host {self.host.describe()} is down: {self.down}")
        if not self.connected:
            self.connect()
        for attempt in (0, 1):
            try:
                done = subprocess.run(
                    self.argv(script),
                    check=False,
                    input=input,
                    stdin=None if input is not None else subprocess.DEVNULL,
                    capture_output=True,
                    timeout=timeout,
                )
            except subprocess.TimeoutExpired:
                raise HostError(
                    f"host {self.host.describe()}: no answer in {timeout:g} s to: {_short(script)}"
                ) from None
            if done.returncode == SSH_ERROR and retry and attempt == 0:
                self.connected = False
                self.connect()
                continue
            break
        if check and done.returncode != 0:
            why = output_tail(done.stderr) or f"exited with status {done.returncode}"
            raise HostError(f"host {self.host.describe()}: {_short(script)}: {why}")
        return done

    def put(self, data: bytes, remote: str, mode: str = "0644") -> None:
        """Writes ``data`` to the file ``remote`` on the host (atomically: a temporary name,
        then a rename), creating its directory."""
        q = shlex.quote(remote)
        self.run(
            f'set -e; mkdir -p "$(dirname {q})"; t={q}.tmp.$$; cat > "$t"; chmod {mode} "$t"; '
            f'mv -f "$t" {q}',
            input=data,
        )

    def read(self, remote: str) -> bytes:
        return self.run(f"cat {shlex.quote(remote)}").stdout

    def close(self) -> None:
        """Ends the control master (and with it the connection); idempotent."""
        if self.control_path.exists():
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                subprocess.run(
                    [*self.ssh_argv()[:-1], "-O", "exit", self.host.destination],
                    check=False,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=10,
                )
        self.connected = False
        if self._own_dir:
            _remove_folder(self.control_dir)


def _short(script: str, limit: int = 60) -> str:
    one = " ".join(script.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _permanent(message: str) -> bool:
    m = message.lower()
    return any(
        s in m
        for s in (
            "host key verification failed",
            "permission denied",
            "could not resolve hostname",
            "no such file",
            "bad configuration option",
        )
    )


def _advice(message: str) -> str | None:
    m = message.lower()
    if "host key verification failed" in m:
        return (
            "the host's key is not known: connect once with ssh to accept it, or add "
            'options = ["StrictHostKeyChecking=accept-new"] to the host'
        )
    if "permission denied" in m:
        return "check the user, `identity = ...` or your ssh agent"
    return None
