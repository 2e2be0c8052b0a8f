"""The interface every fine-model backend implements, and the lifecycle of those holding workers."""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

import numpy as np

from parapush.lifecycle import Closeable
from parapush.physics.fine import check_dynamic
from parapush.physics.propagator import check_batch
from parapush.scene import StateLayout


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
    after it (:meth:`_check_open`, called under ``_lock``). A subclass sets ``layout``, the
    state layout of its fine model, which :meth:`_checked_batch` checks a call's batch against.
    """

    layout: StateLayout

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False

    def _release(self) -> None:
        """Free the workers; called once, by :meth:`close`, with ``_lock`` held."""
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__}: propagate called after close()")

    def _checked_batch(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, dynamic: np.ndarray | None,
        models: object | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """A ``propagate`` call's batch as :func:`~parapush.physics.propagator.check_batch` returns
        it, and ``dynamic`` checked against it (:func:`~parapush.physics.fine.check_dynamic`);
        ``dynamic`` refused with ``models``, the per-row models of the backends that take them."""
        states, controls, durations = check_batch(self.layout, states, controls, durations)
        if dynamic is not None:
            if models is not None:
                raise ValueError("dynamic: give either models or dynamic, not both")
            dynamic = check_dynamic(self.layout, dynamic, states)
        return states, controls, durations, dynamic

    def close(self) -> None:
        """Release the workers; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._release()
