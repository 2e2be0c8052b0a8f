"""Running cost: inverse-square proximity of the target and the pusher to obstacles (ISRR).

The paper's running cost has w_s / ||q_s - p_obs||^2 + w_p / ||q_p - p_obs||^2 with
distances to the obstacle *centre*. Here the distance is the *clearance* c between the
surfaces (so obstacles and bodies of any size are treated alike), measured along the
straight path of each body during each control (the pusher moves in a straight line
under a constant velocity; the target's path is approximated by the chord between the
predicted states, so a body cannot jump over an obstacle between two states)::

    J_obs = sum_{n=0}^{N-1} sum_{obstacles o}  target_gain / max(c_target(n, o), c_min)^2
                                             + pusher_gain / max(c_pusher(n, o), c_min)^2

c(n, o) is the smallest clearance over the segment x_n -> x_{n+1}; c_min
(``min_clearance``) caps the value at contact and penetration. The target counts as a
disc of its bounding radius (exact for cylinders, conservative for boxes). Units: 1/m^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import check_batch, checked_number
from parapush.planning.planar_geometry import segment_obstacle_clearance
from parapush.scene import Obstacle, Scene, StateLayout


@dataclass(frozen=True)
class ObstacleProximity:
    """Inverse-square swept clearance of the target and the pusher to every obstacle.

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object in the state.
        target_radius: m, bounding radius of the target.
        pusher_radius: m.
        obstacles: the scene's static obstacles (the term is 0 without any).
        weight: overall weight (the papers' w_s when the gains are 1).
        target_gain: relative weight of the target's proximity.
        pusher_gain: relative weight of the pusher's proximity (w_p / w_s).
        min_clearance: m, clearance below which the cost stops growing (> 0).
    """

    name: ClassVar[str] = "obstacle_proximity"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "target_gain", "pusher_gain", "min_clearance")

    layout: StateLayout
    target_index: int
    target_radius: float
    pusher_radius: float
    obstacles: tuple[Obstacle, ...]
    weight: float = 1.0
    target_gain: float = 1.0
    pusher_gain: float = 1.0
    min_clearance: float = 0.002

    def __post_init__(self) -> None:
        for field in ("weight", "target_gain", "pusher_gain"):
            object.__setattr__(self, field, checked_number(getattr(self, field), f"{self.name}.{field}"))
        object.__setattr__(
            self,
            "min_clearance",
            checked_number(self.min_clearance, f"{self.name}.min_clearance", strict=True),
        )
        object.__setattr__(self, "obstacles", tuple(self.obstacles))

    @classmethod
    def from_scene(
        cls,
        scene: Scene,
        *,
        weight: float = 1.0,
        target_gain: float = 1.0,
        pusher_gain: float = 1.0,
        min_clearance: float = 0.002,
    ) -> ObstacleProximity:
        return cls(
            layout=scene.layout,
            target_index=scene.target_index,
            target_radius=scene.objects[scene.target_index].bounding_radius,
            pusher_radius=scene.pusher.radius,
            obstacles=scene.obstacles,
            weight=weight,
            target_gain=target_gain,
            pusher_gain=pusher_gain,
            min_clearance=min_clearance,
        )

    def clearances(self, trajectories: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Swept clearances (S, N, n_obstacles) m of the target and of the pusher."""
        target = self.layout.poses(trajectories)[..., self.target_index, :2]
        pusher = trajectories[..., self.layout.pusher_position]
        shape = (*trajectories.shape[:1], trajectories.shape[1] - 1, len(self.obstacles))
        target_clearance = np.empty(shape)
        pusher_clearance = np.empty(shape)
        for index, obstacle in enumerate(self.obstacles):
            target_clearance[..., index] = segment_obstacle_clearance(
                target[:, :-1], target[:, 1:], self.target_radius, obstacle
            )
            pusher_clearance[..., index] = segment_obstacle_clearance(
                pusher[:, :-1], pusher[:, 1:], self.pusher_radius, obstacle
            )
        return target_clearance, pusher_clearance

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        if not self.obstacles:
            return np.zeros(trajectories.shape[0])
        target_clearance, pusher_clearance = self.clearances(trajectories)
        target_cost = 1.0 / np.maximum(target_clearance, self.min_clearance) ** 2
        pusher_cost = 1.0 / np.maximum(pusher_clearance, self.min_clearance) ** 2
        return (self.target_gain * target_cost + self.pusher_gain * pusher_cost).sum(axis=(1, 2))
