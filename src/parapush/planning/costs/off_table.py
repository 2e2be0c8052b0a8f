"""Running cost: a constant for every object that leaves the table (ISRR W_E).

An object leaves the table when its centre is outside the table top shrunk by
``margin`` (m) at any predicted state x_1..x_N (its centre past the edge means it
falls). The unweighted value is the number of such objects, each counted once, so one
dropped object costs exactly ``weight``::

    J_E = sum_{objects i} 1[ exists n in 1..N : centre_i(n) off the table ]

This covers every object, the target and the others alike (the journal's "dropping
non-target objects"); :mod:`~parapush.planning.costs.non_target_objects` does not charge
it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import check_batch, check_term_fields
from parapush.scene import Scene, StateLayout


@dataclass(frozen=True)
class OffTable:
    """Number of objects whose centre leaves the table during the horizon.

    Attributes:
        layout: state layout of the scene.
        half_extents: (half length, half width) of the table top, m.
        weight: cost per dropped object (the paper's W_E).
        margin: m; positive values demand that centres stay this far inside the edges.
    """

    name: ClassVar[str] = "off_table"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "margin")

    layout: StateLayout
    half_extents: tuple[float, float]
    weight: float = 1.0
    margin: float = 0.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight")
        check_term_fields(self, "margin", minimum=-np.inf)

    @classmethod
    def from_scene(cls, scene: Scene, *, weight: float = 1.0, margin: float = 0.0) -> OffTable:
        return cls(layout=scene.layout, half_extents=scene.table.half_extents, weight=weight, margin=margin)

    def off_table(self, trajectories: np.ndarray) -> np.ndarray:
        """(S, n) bool: whether each object leaves the table at some state x_1..x_N."""
        centres = self.layout.poses(trajectories[:, 1:])[..., :2]
        limits = np.asarray(self.half_extents) - self.margin
        outside = np.any(np.abs(centres) > limits, axis=-1)
        return np.any(outside, axis=1)

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        return self.off_table(trajectories).sum(axis=1).astype(float)
