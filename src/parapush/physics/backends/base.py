"""The interface every fine-model backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


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
