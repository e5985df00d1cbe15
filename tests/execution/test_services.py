"""[[service]]: a real memcached per run on a free port, waited for until it accepts
connections and stopped (its whole process group, daemons included) at the run's end;
readiness by log line; scopes run / variant / experiment; a service that never gets ready
or exits at once fails the run with a one-line reason; bad services are errors at
file:line."""

from __future__ import annotations

import itertools
import socket
import struct
import threading

import pytest
from cli_helpers import perflab, write_spec
from perflab.store import Database
from proc_helpers import all_gone

pytestmark = pytest.mark.server

HEAD = """\
name = "svc"
baseline = "a"
repetitions = 2
[[variant]]
name = "a"
[[variant]]
name = "b"
"""
METRIC = """
[[metric]]
name = "v"
better = "higher"
regex = 'v=(?P<value>[0-9]+)'
"""


def _run(tmp_path, body: str, *args: str):
    spec = write_spec(tmp_path, HEAD + body + METRIC)
    db = tmp_path / "p.db"
    return perflab("run", str(spec), "--store", str(db), "--no-compare", *args), db


def test_a_server_per_run_on_a_free_port_ready_then_stopped(tmp_path):
    body = f"""
[[service]]
name = "mc"
port = "{{free_port}}"
command = "echo $$ >> {tmp_path}/pids; echo starting mc; exec memcached -l 127.0.0.1 -p {{port}} -m 16 -U 0 -u $(id -un)"
ready = "tcp://127.0.0.1:{{port}}"
[[phase]]
name = "p"
command = "printf 'stats\\\\r\\\\nquit\\\\r\\\\n' | timeout 5 bash -c 'cat > /dev/tcp/127.0.0.1/{{mc_port}}' && echo v={{mc_port}}"
"""
    r, db = _run(tmp_path, body)
    assert r.code == 0, r.err
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 4  # one memcached per run
    all_gone(pids)
    with Database(db) as s:
        ports = {int(v) for _, _, v in s.metrics(1)}
        assert len(ports) >= 1 and all(1024 <= p < 65536 for p in ports)
        run = s.runs(1)[0]
        assert s.artifact(1, "stdout:service:mc", run.id) == b"starting mc\n"


def test_a_daemon_service_is_held_and_stopped(tmp_path):
    body = f"""
[[service]]
name = "mc"
port = "{{free_port}}"
command = "memcached -d -l 127.0.0.1 -p {{port}} -m 16 -U 0 -u $(id -un) -P {tmp_path}/mc.pid"
ready = "tcp://127.0.0.1:{{port}}"
[[phase]]
name = "p"
command = "for i in $(seq 500); do [ -s {tmp_path}/mc.pid ] && break; sleep 0.01; done; cat {tmp_path}/mc.pid >> {tmp_path}/pids; echo >> {tmp_path}/pids; echo v=1"
"""
    r, _ = _run(tmp_path, body)
    assert r.code == 0, r.err
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 4 and len(set(pids)) == 4  # a daemon per run
    all_gone(pids)  # memcached removes its pid file on SIGTERM: they were stopped cleanly
    assert not (tmp_path / "mc.pid").exists()


def test_ready_by_log_line_and_scopes(tmp_path):
    body = f"""
[[service]]
name = "once"
scope = "experiment"
command = "echo start >> {tmp_path}/once; sleep 0.2; echo listening; exec sleep 600"
ready = "log:^listening$"
[[service]]
name = "per_variant"
scope = "variant"
command = "echo {{variant}} >> {tmp_path}/per-variant; exec sleep 600"
[[phase]]
name = "p"
command = "echo v=1"
"""
    r, db = _run(tmp_path, body)
    assert r.code == 0, r.err
    assert (tmp_path / "once").read_text().split() == ["start"]
    with Database(db) as s:
        order = [x.variant for x in sorted(s.runs(1), key=lambda x: x.order_index)]
    starts = (tmp_path / "per-variant").read_text().split()
    assert starts == [v for v, _ in itertools.groupby(order)]  # restarted when it changes


@pytest.mark.parametrize(
    ("service", "reason"),
    [
        (
            'command = "exec sleep 600"\nready = "tcp://127.0.0.1:1"\nready_timeout = "1s"',
            "service 'x' not ready within 1 s (tcp://127.0.0.1:1)",
        ),
        ('command = "echo boom >&2; exit 3"\nready = "log:never"', "exited with status 3: boom"),
    ],
)
def test_a_service_that_does_not_get_ready_fails_the_run(tmp_path, service, reason):
    body = f'[[service]]\nname = "x"\n{service}\n[[phase]]\nname = "p"\ncommand = "echo v=1"\n'
    r, db = _run(tmp_path, body, "--max-failures", "0")
    assert r.code == 1
    with Database(db) as s:
        runs = s.runs(1)
        assert {x.status for x in runs} == {"failed"}
        assert all(reason in x.reason for x in runs), runs[0].reason


@pytest.mark.parametrize(
    ("service", "message"),
    [
        ('command = "srv --port {prot}"', "unknown parameter '{prot}'"),
        ('scope = "experiment"\ncommand = "srv {run}"', "'{run}' is per run"),
        ('command = "srv"\nready = "http://x"', "use tcp://HOST:PORT"),
        ('command = "srv"\nready = "log:(("', "bad regex"),
    ],
)
def test_bad_services_are_errors_at_their_line(tmp_path, service, message):
    body = f'[[service]]\nname = "x"\n{service}\n[[phase]]\nname = "p"\ncommand = "echo v=1"\n'
    r, db = _run(tmp_path, body)
    assert r.code == 2 and message in r.err and "spec.toml:" in r.err, r.err
    assert not db.exists()


def _listener(behaviour: str):
    """A loopback listener that resets, closes, holds or greets each connection it takes."""
    server = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if behaviour == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            elif behaviour == "close":
                conn.close()
            else:
                if behaviour == "banner":
                    conn.sendall(b"SSH-2.0-x\r\n")
                taken.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    return server, taken


@pytest.mark.parametrize(
    ("behaviour", "ready"),
    [("reset", False), ("close", False), ("hold", True), ("banner", True)],
)
def test_tcp_readiness_needs_the_connection_to_stay_open(behaviour, ready):
    """A port forwarder (QEMU's user-mode network) accepts before anything listens behind
    it and then resets or closes: that is not ready; a silent or greeting listener is."""
    from perflab.execution.services import SETTLE_S, _connects

    server, taken = _listener(behaviour)
    try:
        assert _connects(socket.AF_INET, server.getsockname(), SETTLE_S) is ready
    finally:
        server.close()
        for conn in taken:
            conn.close()
