"""The machines of an experiment: this one (``local``) and every ``[hosts.NAME]`` over SSH.

One executor per host for the whole experiment (one SSH control master each, opened when
the experiment starts so that an unreachable host stops it before any run, and closed at
its end). Steps name their host with ``on = "NAME"``; without it they run here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perflab.run.executor import Executor, LocalExecutor
from perflab.run.remote import RemoteExecutor
from perflab.run.ssh import SshConnection, SshHost

LOCAL = "local"


class Hosts:
    """name → executor; ``local`` is always there.

    specs: the spec's ``[hosts.NAME]`` tables (objects with ``ssh``, ``identity``,
    ``jump``, ``options`` and ``workdir``)."""

    def __init__(self, local: Executor | None = None, specs: Mapping[str, Any] | None = None):
        self.local = local or LocalExecutor()
        self._remote: dict[str, RemoteExecutor] = {}
        self._control_dir: Path | None = None
        self._files = {name: list(h.files) for name, h in (specs or {}).items()}
        for name, h in (specs or {}).items():
            if self._control_dir is None:
                self._control_dir = Path(tempfile.mkdtemp(prefix="perflab-ssh-"))
            target = SshHost.parse(name, h.ssh, h.identity, h.jump, tuple(h.options))
            conn = SshConnection(target, self._control_dir)
            self._remote[name] = RemoteExecutor(conn, h.workdir)

    @property
    def names(self) -> list[str]:
        return [LOCAL, *self._remote]

    def __getitem__(self, name: str | None) -> Executor:
        if name is None or name == LOCAL:
            return self.local
        return self._remote[name]

    def env_for(self, name: str | None, env: Mapping[str, str]) -> dict[str, str]:
        """A step's environment as sent to host ``name``: everything here; to a remote host
        only what perflab adds to this machine's (a host keeps its own login environment)."""
        if self[name] is self.local:
            return dict(env)
        return {k: v for k, v in env.items() if os.environ.get(k) != v}

    def remote_executor(self, name: str) -> RemoteExecutor:
        return self._remote[name]

    def remote(self) -> Iterable[RemoteExecutor]:
        return self._remote.values()

    def prepare(self, base: Path | None = None) -> None:
        """Connects to every remote host, stages what steps need there and copies each
        host's ``files`` (relative to ``base``) into its working directory; HostError (one
        line naming the host) for the first that cannot be used."""
        for name, ex in self._remote.items():
            ex.prepare()
            for f in self._files.get(name, []):
                ex.put_file((base or Path.cwd()) / f)

    def close(self) -> None:
        for ex in self._remote.values():
            ex.conn.close()
        if self._control_dir is not None:
            with contextlib.suppress(OSError):
                for p in self._control_dir.iterdir():
                    p.unlink()
                self._control_dir.rmdir()
