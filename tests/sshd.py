"""A real OpenSSH server on loopback for tests of remote hosts.

    from sshd import start_sshd
    with start_sshd() as srv:
        srv.port, srv.user, srv.identity      # log in as the current user with this key
        srv.host_table()                       # the spec's [hosts.NAME] keys for it

With ``kernel=...`` the server is a host whose kernel can be switched: its sessions see a
``uname -r`` and a boot id (``/proc/sys/kernel/random/boot_id``) of their own, and
``srv.boot_command`` — the spec's ``boot`` for it — "boots" the kernel named by
``{kernel}``: the host then answers with that kernel and a new boot id, as after a kexec.

It runs as the current user on 127.0.0.1 (a non-root sshd can only log that user in),
with a host key and an authorized key made for it in a temporary directory; host keys
are accepted on first use into a known_hosts file of that directory, so nothing in
~/.ssh changes; its sessions do not read the user's ~/.bashrc (``SetEnv SHLVL=1``). A
missing sshd is a test failure, never a skip: ``scripts/setup`` installs openssh-server.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from servers import LOOPBACK, free_port

READY_TIMEOUT_S = 10.0


class Sshd:
    def __init__(
        self, workdir: Path, kernel: str | None = None, listen: tuple[str, ...] = (LOOPBACK,)
    ) -> None:
        self.workdir = workdir
        self.listen = listen  # loopback addresses only (127.0.0.0/8)
        self.user = getpass.getuser()
        self.identity = workdir / "client_key"
        self.known_hosts = workdir / "known_hosts"
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        if not os.access(sshd, os.X_OK):
            raise RuntimeError("sshd not found: scripts/setup installs openssh-server")
        for name in ("host_key", "client_key"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(workdir / name)],
                check=True,
            )
        (workdir / "authorized_keys").write_bytes((workdir / "client_key.pub").read_bytes())
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
        self.port = free_port()
        config = workdir / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            + "".join(f"ListenAddress {a}\n" for a in listen)
            + f"HostKey {workdir / 'host_key'}\n"
            f"AuthorizedKeysFile {workdir / 'authorized_keys'}\nPidFile {workdir / 'sshd.pid'}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            "LogLevel ERROR\nMaxSessions 100\nMaxStartups 100\n"
            # Sessions do not read the user's ~/.bashrc: Debian's bash reads it for every
            # command over SSH unless SHLVL says it is a nested shell. A test host does not
            # depend on the developer's rc files, and they cost every remote command (pyenv's
            # init: 0.3 s, ten times the command itself; an experiment makes hundreds).
            "SetEnv SHLVL=1\n"
        )
        if kernel is not None:
            config.write_text(config.read_text() + self._fake_kernel(kernel))
        self._log = open(workdir / "sshd.log", "wb")  # closed in stop()
        self.proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)], stdout=self._log, stderr=subprocess.STDOUT
        )
        self._wait_ready()

    def _fake_kernel(self, kernel: str) -> str:
        """sshd_config lines giving sessions their own ``uname -r`` and boot id: programs of
        that name first on PATH (set after the login shell's own start-up files)."""
        fake, bin_dir = self.workdir / "fake", self.workdir / "fake" / "bin"
        bin_dir.mkdir(parents=True)
        (fake / "kernel").write_text(kernel + "\n")
        (fake / "boot_id").write_text(Path("/proc/sys/kernel/random/uuid").read_text())
        scripts = {
            "uname": f'[ "$1" = -r ] && exec /bin/cat {fake}/kernel\nexec /usr/bin/uname "$@"\n',
            "cat": f'[ "$*" = /proc/sys/kernel/random/boot_id ] && exec /bin/cat {fake}/boot_id\n'
            'exec /bin/cat "$@"\n',
        }
        for name, body in scripts.items():
            (bin_dir / name).write_text("#!/bin/sh\n" + body)
            (bin_dir / name).chmod(0o755)
        self.boot_command = f"echo {{kernel}} > {fake}/kernel && /bin/cat /proc/sys/kernel/random/uuid > {fake}/boot_id"
        return f'ForceCommand PATH={bin_dir}:$PATH; eval "$SSH_ORIGINAL_COMMAND"\n'

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited at start: {self.log()[-500:]}")
            try:
                with socket.create_connection((self.listen[0], self.port), timeout=1.0) as s:
                    if s.recv(64).startswith(b"SSH-2.0"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"sshd not ready in {READY_TIMEOUT_S} s: {self.log()[-500:]}")

    def log(self) -> str:
        return (self.workdir / "sshd.log").read_text(errors="replace")

    @property
    def destination(self) -> str:
        return f"{self.user}@{LOOPBACK}:{self.port}"

    def options(self) -> list[str]:
        return [f"UserKnownHostsFile={self.known_hosts}", "StrictHostKeyChecking=accept-new"]

    def host_table(self) -> str:
        """TOML keys of a spec's ``[hosts.NAME]`` table for this server."""
        opts = ", ".join(f'"{o}"' for o in self.options())
        return f'ssh = "{self.destination}"\nidentity = "{self.identity}"\noptions = [{opts}]\n'

    def one_phase_spec(self, *, repetitions: int = 1, settings: str = "", before: str = "") -> str:
        """An experiment of two variants (a, b) whose phase ``p`` prints ``v=1`` on this
        server (host ``dut``), its metric ``v``; ``settings``: more top-level keys;
        ``before``: phases run before ``p`` (TOML)."""
        return f"""\
name = "remote"
baseline = "a"
repetitions = {repetitions}
{settings}
[hosts.dut]
{self.host_table()}
[[variant]]
name = "a"
[[variant]]
name = "b"
{before}
[[phase]]
name = "p"
on = "dut"
command = "echo v=1"
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> Sshd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_sshd(kernel: str | None = None, listen: tuple[str, ...] = (LOOPBACK,)) -> Sshd:
    """An sshd on ``listen`` (loopback addresses: 127.0.0.10 and 127.0.0.11 make two
    "devices" of one server for a pool)."""
    assert all(a.startswith("127.") for a in listen), "loopback only"
    return Sshd(Path(tempfile.mkdtemp(prefix="perflab-sshd-")), kernel, listen)
