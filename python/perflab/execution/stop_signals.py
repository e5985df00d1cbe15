"""SIGINT and SIGTERM while an experiment runs: the first sets the runner's stop request
(the command in flight stops, its run goes back to pending); a second Ctrl-C raises
KeyboardInterrupt, to stop waiting for cleanup."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

#: A signal's disposition, as `signal.signal` takes and returns it.
SignalHandler = Callable[[int, FrameType | None], Any] | int | None


def install_stop_signals(
    stop: threading.Event, message: Callable[[str], None]
) -> dict[signal.Signals, SignalHandler] | None:
    """Installs the handlers; returns the ones they replace (None off the main thread,
    where Python cannot set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop waiting for cleanup
        stop.set()
        message("stopping: the run in flight is cancelled and will be redone on resume")

    return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}


def restore_signals(previous: dict[signal.Signals, SignalHandler] | None) -> None:
    if previous:
        for s, h in previous.items():
            signal.signal(s, h)
