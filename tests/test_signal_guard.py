"""The signal-state guard of every test (signal_guard.py, used by conftest.py) can fail:
on a state changed on purpose here, and restored."""

from __future__ import annotations

import signal

import pytest
from signal_guard import capture, check, differences, restore


def test_differences_name_a_replaced_handler_an_ignored_signal_and_a_blocked_one():
    before = capture()
    try:
        signal.signal(signal.SIGINT, lambda signum, frame: None)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        changed = differences(before, capture())
    finally:
        restore(before)
    assert capture() == before and not differences(before, capture())
    assert len(changed) == 3, changed
    assert changed[0].startswith("SIGINT handler default_int_handler -> ")
    assert changed[1] == "SIGTERM handler SIG_DFL -> SIG_IGN"
    assert changed[2] == "signal mask: blocked ['SIGINT'], unblocked nothing"


def test_check_fails_naming_the_change_and_restores_the_state():
    before = capture()
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        with pytest.raises(pytest.fail.Exception) as info:
            check(before, capture(), "the test")
    finally:
        restore(before)
    assert "the test left the process's signal state changed (restored now)" in str(info.value)
    assert "blocked ['SIGTERM']" in str(info.value)
    check(before, capture(), "nothing")  # the same state: passes


def test_the_autouse_fixture_fails_the_tests_that_leak_and_only_them(pytester):
    pytester.makeconftest("from signal_guard import keep_signal_state  # noqa: F401\n")
    pytester.makepyfile(
        """
        import signal

        def test_ignores_sigint():
            signal.signal(signal.SIGINT, signal.SIG_IGN)

        def test_blocks_sigterm():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

        def test_restores_what_it_changes():
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGINT, previous)

        def test_starts_from_the_restored_state():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=4, errors=2)
    left = "the test left the process's signal state changed (restored now): "
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_ignores_sigint*",
            left + "SIGINT handler default_int_handler -> SIG_IGN",
            "*ERROR at teardown of test_blocks_sigterm*",
            left + "signal mask: blocked ?'SIGTERM'?, unblocked nothing",
        ]
    )
