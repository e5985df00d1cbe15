"""The process's signal state around each test: a test (or perflab code it calls in-process)
that leaves a handler replaced, a signal ignored or blocked fails, and the state is put back
so that the tests after it run as they would alone.

A test run starts from the state of a foreground launch: a background job of a
non-interactive shell (`make test > log &`, without job control) inherits SIGINT ignored
(POSIX), Python then keeps it ignored instead of installing its KeyboardInterrupt handler,
and xdist's workers inherit that; a launcher can likewise pass SIGINT blocked. A test of
Ctrl-C must not depend on how the suite was started."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest

#: The signals perflab handles (SIGINT, SIGTERM: stop_signals.py) or whose disposition its
#: children must not inherit (SIGPIPE, SIGXFSZ: ignored by Python), and SIGCHLD.
WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD)


class SignalState(NamedTuple):
    handlers: tuple[Any, ...]  # signal.getsignal of each WATCHED signal
    blocked: frozenset[int]  # this thread's signal mask


def capture() -> SignalState:
    return SignalState(
        tuple(signal.getsignal(s) for s in WATCHED),
        frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, ())),
    )


def differences(before: SignalState, after: SignalState) -> list[str]:
    """What changed, one phrase each (empty: nothing)."""
    changed = [
        f"{s.name} handler {_name(a)} -> {_name(b)}"
        for s, a, b in zip(WATCHED, before.handlers, after.handlers)
        if a != b
    ]
    if before.blocked != after.blocked:
        gained = sorted(signal.Signals(s).name for s in after.blocked - before.blocked)
        lost = sorted(signal.Signals(s).name for s in before.blocked - after.blocked)
        changed.append(f"signal mask: blocked {gained or 'nothing'}, unblocked {lost or 'nothing'}")
    return changed


def restore(state: SignalState) -> None:
    for s, h in zip(WATCHED, state.handlers):
        if h is not None and signal.getsignal(s) != h:  # None: set outside Python, not ours to set
            signal.signal(s, h)
    signal.pthread_sigmask(signal.SIG_SETMASK, state.blocked)


#: The state every test starts from (set by `normalize`, when the session starts).
_baseline: SignalState | None = None


def normalize() -> SignalState:
    """Sets the state of a foreground launch: Python's SIGINT handler, SIGINT and SIGTERM
    deliverable; every test is then checked to start from it. Returns it."""
    global _baseline
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))
    _baseline = capture()
    return _baseline


def check(before: SignalState, after: SignalState, what: str) -> None:
    """Fails (pytest.fail) naming what changed between the two states, after restoring
    ``before``; nothing when they are the same (a few microseconds)."""
    if after == before:
        return
    changed = differences(before, after)
    if changed:
        restore(before)
        pytest.fail(
            f"{what} left the process's signal state changed (restored now): " + "; ".join(changed),
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def keep_signal_state() -> Iterator[None]:
    """Fails a test that changes the signal state: at its teardown when the test or its
    function-scoped fixtures did, at its set-up when it starts from another state than the
    session's (a module-scoped fixture, or something outside any test, did)."""
    before = capture()
    if _baseline is not None:
        check(_baseline, before, "a module- or session-scoped fixture (or collection)")
    yield
    check(before, capture(), "the test")


def _name(handler: Any) -> str:
    if isinstance(handler, signal.Handlers):
        return handler.name
    return getattr(handler, "__qualname__", None) or repr(handler)
