"""Shared fixtures. Servers: a fresh real memcached / redis-server per test on a free
127.0.0.1 port, stopped afterwards (see servers.py)."""

from __future__ import annotations

import pytest

from servers import start_memcached, start_redis


@pytest.fixture
def memcached():
    with start_memcached() as server:
        yield server


@pytest.fixture
def redis_server():
    with start_redis() as server:
        yield server
