"""Shared access for predictions, exclusive access for changing the fine model.

Several predictions read the fine model at once (their fine batches are interleaved by
:class:`parapush.prediction.fair_scheduler.FairFineScheduler`); changing its object
parameters must wait until none is running. A waiting change goes first: predictions that
arrive after it wait for it, so a stream of requests cannot postpone it forever.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ModelAccessLock:
    """A readers-writer lock with writer preference: :meth:`shared` for predictions,
    :meth:`exclusive` for changing the model."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @property
    def readers(self) -> int:
        """Holders of shared access now."""
        with self._condition:
            return self._readers

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._condition:
            while self._writing or self._writers_waiting:
                self._condition.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._condition:
            self._writers_waiting += 1
            while self._writing or self._readers:
                self._condition.wait()
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._condition:
                self._writing = False
                self._condition.notify_all()


__all__ = ["ModelAccessLock"]
