"""Shared fixtures. Servers: a fresh real memcached / redis-server per test on a free
127.0.0.1 port, stopped afterwards (see servers.py)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis caches (constants of the modules it has seen, with their absolute paths) go to a
# scratch folder removed at exit, never into the checkout.
_HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="perflab-tests-hypothesis-")
set_hypothesis_home_dir(_HYPOTHESIS_HOME)
atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)

from servers import start_memcached, start_redis  # noqa: E402 -- after the hypothesis home is set
from signal_guard import keep_signal_state, normalize  # noqa: E402, F401 -- an autouse fixture

# test_signal_guard.py runs the guard on a test of its own; pg.py: a PostgreSQL server
pytest_plugins = ("pytester", "pg")

# Every test starts from a foreground launch's signal state (a background `make test &`
# inherits SIGINT ignored), and fails if it leaves that state changed (signal_guard.py).
normalize()

# Tests read what perflab prints, not how it is laid out: they run at a wide terminal width
# whatever the caller's, so no line of a table or a message is wrapped. The layout at 80,
# 100 and 120 columns, and without COLUMNS, is tested in test_terminal_width.py.
os.environ["COLUMNS"] = "200"


@pytest.fixture
def memcached():
    with start_memcached() as server:
        yield server


@pytest.fixture
def redis_server():
    with start_redis() as server:
        yield server


#: Test modules by what they need beyond Python and the CPU (pytest markers, registered
#: in pyproject.toml). `make test-fast` runs everything else: the pure tests, < 1 minute.
MODULE_MARKS = {
    "server": {  # a real memcached, redis-server or sshd on loopback
        "test_kv_phase.py",
        "test_load_api.py",
        "test_load_cli.py",
        "test_load_correctness.py",
        "test_load_errors.py",
        "test_load_faults.py",
        "test_ssh_hosts.py",
        "test_labgrid.py",  # and a labgrid coordinator and exporter
    },
    "browser": {"test_report_browser.py"},  # headless Chromium
    "slow": {  # whole experiments, processes, simulations or fuzzing: seconds each
        "test_adaptive_run.py",
        "test_agreement.py",
        "test_fuzz.py",
        "test_history.py",
        "test_labgrid.py",
        "test_overhead_run.py",
        "test_probes.py",
        "test_process_hygiene.py",
        "test_run_e2e.py",
        "test_run_store_faults.py",
        "test_store_faults.py",
        "test_validation.py",
    },
}
SERVER_FIXTURES = {"memcached", "redis_server", "sshd"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for mark, modules in MODULE_MARKS.items():
            if item.path.name in modules:
                item.add_marker(mark)
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("server")
