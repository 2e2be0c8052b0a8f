"""The process backend: a persistent pool of worker processes, each with its own model."""

from __future__ import annotations

import numpy as np

from parapush.physics.fine import FineSettings
from parapush.scene import Scene


class WorkerError(RuntimeError):
    """A worker process died or failed and the call could not be completed."""


class ProcessBackend:
    """Persistent pool of ``workers`` processes; each builds the fine model once.

    A worker that dies is replaced and its work resubmitted (up to ``retries`` times per
    call); beyond that the call raises :class:`WorkerError` naming what happened. Never hangs.
    """

    def __init__(self, scene: Scene, settings: FineSettings, *, workers: int, retries: int = 2) -> None:
        raise NotImplementedError

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> ProcessBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
