"""A real labgrid lab on loopback for the tests of places: `labgrid-coordinator` on a free
127.0.0.1 port (its places.yaml in a temporary folder) and one `labgrid-exporter`
exporting the resources it is given, both stopped (and waited for) at the end.

    with start_lab({"dut": {"NetworkService": {"address": "127.0.0.1", ...}}}) as lab:
        lab.address                          # "127.0.0.1:PORT", for labgrid_coordinator
        lab.create_place("dut", "dut")       # labgrid-client create + add-match EXPORTER/dut/*
        lab.client("-p", "dut", "acquire", who=("alice", "alice-laptop"))
        lab.holder("dut")                    # "alice-laptop/alice", or None when free

Places are made and held with the real `labgrid-client` (``-x ADDRESS``), as a team
member would; ``who`` sets its labgrid identity (``LG_USERNAME``, ``LG_HOSTNAME``).
Every wait is a bounded poll. labgrid comes with the test extra (scripts/setup): missing,
it is a test failure, never a skip.

`Pdu` is a network power switch for a lab VM: an HTTP server on loopback speaking
labgrid's ``simplerest`` power protocol (``GET /relay/0/1`` on, ``/relay/0/0`` off,
``/relay/0`` the state), whose outlet starts the VM's command and stops it — what a
``NetworkPowerPort`` of the exporter points at.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from servers import LOOPBACK, free_port

READY_TIMEOUT_S = 30.0
EXPORTER = "lab-exporter"
#: Two team members' labgrid identities (user, host).
ALICE = ("alice", "alice-laptop")
BOB = ("bob", "bob-desktop")
BIN = Path(sys.executable).parent


def _program(name: str) -> str:
    path = BIN / name
    if not path.exists():
        raise RuntimeError(
            f"{name} not found next to {sys.executable}: scripts/setup installs labgrid"
        )
    return str(path)


def identity_env(user: str, host: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose labgrid identity is ``host/user`` and whose login name (what
    perflab records as the experiment's user) is ``user``: another team member."""
    env = dict(os.environ if base is None else base)
    env.update(LG_USERNAME=user, LG_HOSTNAME=host, USER=user, LOGNAME=user, NO_COLOR="1")
    return env


class Lab:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self._procs: list[tuple[subprocess.Popen[bytes], Any]] = []

    def start(self, resources: dict[str, dict[str, Any]]) -> None:
        workdir = self.workdir
        (workdir / "coordinator").mkdir()
        self.coordinator = self._start(
            "coordinator", [_program("labgrid-coordinator"), "-l", self.address],
            cwd=workdir / "coordinator",
        )  # fmt: skip
        self._wait(self._listening, "the coordinator listens")
        config = workdir / "exporter.yaml"
        config.write_text(yaml.safe_dump(resources))
        self.exporter = self._start(
            "exporter",
            [_program("labgrid-exporter"), "-c", self.address, "-n", EXPORTER,
             "--hostname", LOOPBACK, str(config)],
            cwd=workdir,
        )  # fmt: skip
        groups = [f"{EXPORTER}/{g}/" for g in resources]
        self._wait(lambda: all(g in self.client("resources").stdout for g in groups), "exported")

    def _start(self, name: str, argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # closed in stop()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        self._procs.append((proc, log))
        return proc

    def _listening(self) -> bool:
        try:
            socket.create_connection((LOOPBACK, self.port), timeout=1.0).close()
            return True
        except OSError:
            return False

    def _wait(self, predicate: Any, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not predicate():
            for proc, _ in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"labgrid {proc.args[0]} exited: {self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"not within {READY_TIMEOUT_S} s: {what}: {self.logs()}")
            time.sleep(0.05)

    def logs(self) -> str:
        return "\n".join(
            f"{p.name}: {p.read_text(errors='replace')[-1500:]}" for p in self.workdir.glob("*.log")
        )

    def client(
        self, *args: str, who: tuple[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``labgrid-client -x ADDRESS ARGS`` as ``who`` (user, host); this process's
        identity when None."""
        env = identity_env(*who) if who else None
        r = subprocess.run(
            [_program("labgrid-client"), "-x", self.address, *args],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        if check and r.returncode != 0:
            raise AssertionError(f"labgrid-client {' '.join(args)}: {r.stderr}{r.stdout}")
        return r

    def create_place(self, place: str, group: str) -> None:
        self.client("-p", place, "create")
        self.client("-p", place, "add-match", f"{EXPORTER}/{group}/*")

    def show(self, place: str) -> str:
        return self.client("-p", place, "show").stdout

    def holder(self, place: str) -> str | None:
        """``HOST/USER`` holding the place, or None when it is free."""
        for line in self.show(place).splitlines():
            if line.strip().startswith("acquired:"):
                value = line.split(":", 1)[1].strip()
                return None if value == "None" else value
        raise AssertionError(f"no 'acquired:' in labgrid-client show {place}")

    def stop(self) -> None:
        for proc, log in reversed(self._procs):  # the exporter first, then the coordinator
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_lab(resources: dict[str, dict[str, Any]]) -> Lab:
    lab = Lab(Path(tempfile.mkdtemp(prefix="perflab-labgrid-")))
    try:
        lab.start(resources)
    except BaseException:
        lab.__exit__()
        raise
    return lab


def ssh_service(srv: Any) -> dict[str, Any]:
    """An exporter's NetworkService for a test sshd (tests/sshd.py)."""
    return {"NetworkService": {"address": LOOPBACK, "username": srv.user, "port": srv.port}}


class Pdu:
    """One outlet powering ``argv`` (a VM in the foreground): on starts it, off stops it.
    ``events``: "on"/"off" in the order asked; ``url``: a NetworkPowerPort's ``host``."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.argv, self.log, self.env = argv, log, env
        self.events: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        pdu = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")  # relay, index[, value]
                body = pdu.switch(parts[2] if len(parts) > 2 and parts[2] else None)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self.server.server_address[1]}/relay/{{index}}/{{value}}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def switch(self, value: str | None) -> bytes:
        with self._lock:
            if value == "1":
                self.events.append("on")
                if not self.on:
                    with open(self.log, "ab") as out:
                        self.proc = subprocess.Popen(
                            self.argv, stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, env=self.env,
                        )  # fmt: skip
            elif value == "0":
                self.events.append("off")
                self._off()
            return b"1" if self.on else b"0"

    @property
    def on(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _off(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            self._off()

    def __enter__(self) -> Pdu:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
