"""The thread backend: ``mujoco.rollout`` or ``mujoco.batch`` on a pool of threads."""

from __future__ import annotations

import numpy as np

from parapush.physics.fine import FineModel

ENGINES = ("rollout", "batch")


class ThreadBackend:
    """Simulates the batch on ``threads`` threads sharing one ``MjModel`` (mj_step releases
    the GIL). Bit-identical to :meth:`FineModel.propagate`.

    Args:
        fine_model: the fine model.
        threads: number of threads; defaults to ``os.cpu_count()``.
        engine: ``"rollout"`` (``mujoco.rollout.Rollout``) or ``"batch"`` (``mujoco.batch.Batch``).
    """

    def __init__(self, fine_model: FineModel, *, threads: int | None = None, engine: str = "rollout") -> None:
        raise NotImplementedError

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> ThreadBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
