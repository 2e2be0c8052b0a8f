"""The analytical (kinematic) coarse pushing model of ISRR 2019, Eq 5-8."""

from __future__ import annotations

import numpy as np

from parapush.scene import Scene


class AnalyticalCoarseModel:
    """Kinematic pushing model C(x, u, dt); a :class:`~parapush.physics.propagator.Propagator`.

    Args:
        scene: the scene (object shapes and the pusher radius are used).
        rotation_gain: K_omega of Eq 6 (dimensionless, >= 0).
    """

    def __init__(self, scene: Scene, *, rotation_gain: float = 0.1) -> None:
        raise NotImplementedError

    def propagate(self, states: np.ndarray, controls: np.ndarray, durations: np.ndarray) -> np.ndarray:
        raise NotImplementedError
