"""The serial backend: the fine model's own loop, one segment after the other."""

from __future__ import annotations

import numpy as np

from parapush.lifecycle import Closeable
from parapush.physics.fine import FineModel


class SerialBackend(Closeable):
    """Runs :meth:`FineModel.propagate` on the calling thread (``workers = 1``)."""

    def __init__(self, fine_model: FineModel) -> None:
        self.fine_model = fine_model
        self.layout = fine_model.layout
        self.workers = 1

    def propagate(
        self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray, *, dynamic: np.ndarray | None = None
    ) -> np.ndarray:
        return self.fine_model.propagate(states, controls, durations, dynamic=dynamic)

    def close(self) -> None:
        """Nothing to release: the model runs on the calling thread."""
