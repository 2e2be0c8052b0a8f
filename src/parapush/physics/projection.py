"""Projection of infeasible (interpenetrating) states to the nearest feasible ones, ISRR Eq 9."""

from __future__ import annotations

import numpy as np

from parapush.scene import Scene


class FeasibilityProjector:
    """Moves penetrating objects to the nearest non-penetrating poses (the pusher never moves)."""

    def __init__(self, scene: Scene, *, passes: int = 8) -> None:
        raise NotImplementedError

    def project(self, states: np.ndarray) -> np.ndarray:
        """States (M, D) -> (M, D) without pusher/object or object/object penetration."""
        raise NotImplementedError
