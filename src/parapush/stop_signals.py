"""SIGINT and SIGTERM recorded for a long-running program's main loop, with no lock in the handler.

A Python signal handler runs in the main thread between two bytecodes, whatever that thread was
doing, possibly holding a lock. A handler that takes a lock the main thread may hold deadlocks
it: ``threading.Event.set()``, called by a handler that interrupted the same event's ``wait()``
after its timeout (the event's condition lock held), waits for itself for ever, and every later
signal nests another waiting handler. Seen in the stack: a simulated driver stopped by SIGINT and
SIGTERM hung in three nested handlers' ``Event.set``; the bringup's SIGKILL ended such nodes
(exit -9). :class:`StopSignals`' handler only appends the signal's number to a list, and the main
thread polls that list.

Before a program's main loop there is its import: :mod:`parapush.program_entry` makes a stop
there quiet too.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable
from types import FrameType

__all__ = ["POLL_PERIOD", "STOP_SIGNALS", "StopSignals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a program cleanly."""

POLL_PERIOD = 0.05
"""s between two looks at the received signals in :meth:`StopSignals.wait`."""


class StopSignals:
    """Records ``signals`` (SIGINT and SIGTERM by default) while installed.

    Use as a context manager, or :meth:`install` and :meth:`restore` (the handlers that were
    there before). Only the main thread may install it (Python's rule for signal handlers).

    Attributes:
        signals: the signal numbers recorded.
        received: the signal numbers received so far, in order.
    """

    def __init__(self, signals: Iterable[int] = STOP_SIGNALS) -> None:
        self.signals = tuple(signal.Signals(number) for number in signals)
        if not self.signals:
            raise ValueError("signals: expected at least one signal")
        self.received: list[int] = []
        self._previous: dict[int, object] = {}

    def install(self) -> StopSignals:
        """Record the signals from now on; returns self."""
        if self._previous:
            raise RuntimeError("StopSignals: already installed")
        self._previous = {number: signal.signal(number, self._record) for number in self.signals}
        return self

    def restore(self) -> None:
        """Put back the handlers that were there at :meth:`install`; idempotent."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _record(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002 - the handler's signature
        self.received.append(signum)  # a list's append takes no lock (the module docstring says why that matters)

    def wait(self, timeout: float) -> bool:
        """Sleep until one of the signals has been received or ``timeout`` s have passed
        (a signal interrupts the sleep: it is noticed within ``POLL_PERIOD``); True when one has."""
        deadline = time.monotonic() + timeout
        while not self.received:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(remaining, POLL_PERIOD))
        return True

    def __enter__(self) -> StopSignals:
        return self.install()

    def __exit__(self, *exc_info: object) -> None:
        self.restore()
