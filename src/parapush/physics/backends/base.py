"""The interface every fine-model backend implements, and the lifecycle of those holding workers."""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

import numpy as np

from parapush.lifecycle import Closeable


@runtime_checkable
class FineBackend(Protocol):
    """Evaluates the fine model on batches; a resource holder (use it as a context manager).

    Attributes:
        workers: how many segments it can simulate at the same time.
    """

    workers: int

    def propagate(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *, dynamic: np.ndarray | None = None
    ) -> np.ndarray:
        """As :meth:`parapush.physics.fine.FineModel.propagate`, bit-identical to it (``dynamic``:
        the objects that move in each row, see :meth:`~parapush.physics.fine.FineModel.fidelity_model`)."""
        ...

    def close(self) -> None:
        """Release threads/processes; idempotent."""
        ...

    def __enter__(self) -> FineBackend: ...

    def __exit__(self, *exc_info: object) -> None: ...


class WorkerBackend(Closeable):
    """Lifecycle shared by the backends that hold workers (threads, processes, Ray actors).

    ``propagate`` and :meth:`close` are serialised by ``_lock``; :meth:`close` releases the
    workers once, through the subclass's :meth:`_release`, and ``propagate`` refuses to run
    after it (:meth:`_check_open`, called under ``_lock``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False

    def _release(self) -> None:
        """Free the workers; called once, by :meth:`close`, with ``_lock`` held."""
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}: propagate called after close()")

    def close(self) -> None:
        """Release the workers; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()
