"""Shared fixtures. Servers: a fresh real memcached / redis-server per test on a free
127.0.0.1 port, stopped afterwards (see servers.py)."""

from __future__ import annotations

import atexit
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


@pytest.fixture
def memcached():
    with start_memcached() as server:
        yield server


@pytest.fixture
def redis_server():
    with start_redis() as server:
        yield server
