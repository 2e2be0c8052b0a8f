"""Running cost: inverse-square proximity of the target and the pusher to obstacles (ISRR).

The paper's running cost has w_s / ||q_s - p_obs||^2 + w_p / ||q_p - p_obs||^2 with
distances to the obstacle *centre*. Here the distance is the *clearance* c between the
surfaces (so obstacles and bodies of any size are treated alike), measured along the
straight path of each body during each control (the pusher moves in a straight line
under a constant velocity; the target's path is approximated by the chord between the
predicted states, so a body cannot jump over an obstacle between two states)::

    J_obs = sum_{n=0}^{N-1} sum_{obstacles o}  target_gain * f(c_target(n, o))
                                             + pusher_gain * f(c_pusher(n, o))
    f(c)  = 1 / max(c, c_min)^2  -  1 / c_inf^2      for c < c_inf, else 0

c(n, o) is the smallest clearance over the segment x_n -> x_{n+1}; c_min
(``min_clearance``) caps the value at contact and penetration. c_inf
(``influence_distance``) is an optional cut-off: beyond it an obstacle costs nothing, so
the term does not push a target that is already clear of the obstacles past its goal
(None: no cut-off, the paper's pure inverse square). A cylinder target is its disc, swept
exactly; any other outline is its polygon at :data:`~parapush.physics.planar_geometry.SWEEP_SAMPLES`
poses along each control (:func:`~parapush.physics.planar_geometry.swept_outline_obstacle_clearance`).
Until 2026-11-27 every target was the disc of its bounding radius: for the scene format's
default box (10.9 x 15.4 cm, bounding radius 9.4 cm) that disc reached 3.9 cm past the box's
long sides, so a box beside an obstacle cost as much as one touching it and every push round
an obstacle looked like a collision (measured on a box 13 cm from an obstacle: 15.2 of a plan's
15.5 cost was this term while the box's true clearance stayed positive). Units: 1/m^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.physics.planar_geometry import segment_obstacle_clearance, swept_outline_obstacle_clearance
from parapush.planning.costs.cost_term import CostConfigError, check_batch, check_term_fields, checked_number
from parapush.scene import Obstacle, Outline, Scene, StateLayout


@dataclass(frozen=True)
class ObstacleProximity:
    """Inverse-square swept clearance of the target and the pusher to every obstacle.

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object in the state.
        target_radius: m, bounding radius of the target.
        target_outline: the target's outline when it is not a disc (its polygon is swept), None
            for a cylinder (the disc of ``target_radius``).
        pusher_radius: m.
        obstacles: the scene's static obstacles (the term is 0 without any).
        weight: overall weight (the papers' w_s when the gains are 1).
        target_gain: relative weight of the target's proximity.
        pusher_gain: relative weight of the pusher's proximity (w_p / w_s).
        min_clearance: m, clearance below which the cost stops growing (> 0).
        influence_distance: m, clearance beyond which the cost is 0 (> min_clearance), or None.
    """

    name: ClassVar[str] = "obstacle_proximity"
    PARAMETERS: ClassVar[tuple[str, ...]] = (
        "weight",
        "target_gain",
        "pusher_gain",
        "min_clearance",
        "influence_distance",
    )

    layout: StateLayout
    target_index: int
    target_radius: float
    pusher_radius: float
    obstacles: tuple[Obstacle, ...]
    target_outline: Outline | None = None
    weight: float = 1.0
    target_gain: float = 1.0
    pusher_gain: float = 1.0
    min_clearance: float = 0.002
    influence_distance: float | None = None

    def __post_init__(self) -> None:
        check_term_fields(self, "weight", "target_gain", "pusher_gain")
        check_term_fields(self, "min_clearance", strict=True)
        if self.influence_distance is not None:
            influence = checked_number(
                self.influence_distance, f"{self.name}.influence_distance", strict=True
            )
            if influence <= self.min_clearance:
                raise CostConfigError(
                    f"{self.name}.influence_distance: must be > min_clearance ({self.min_clearance}), "
                    f"got {influence!r}"
                )
            object.__setattr__(self, "influence_distance", influence)
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
        influence_distance: float | None = None,
    ) -> ObstacleProximity:
        target = scene.objects[scene.target_index]
        return cls(
            layout=scene.layout,
            target_index=scene.target_index,
            target_radius=target.bounding_radius,
            target_outline=None if target.shape == "cylinder" else target.outline,
            pusher_radius=scene.pusher.radius,
            obstacles=scene.obstacles,
            weight=weight,
            target_gain=target_gain,
            pusher_gain=pusher_gain,
            min_clearance=min_clearance,
            influence_distance=influence_distance,
        )

    def clearances(self, trajectories: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Swept clearances (S, N, n_obstacles) m of the target and of the pusher."""
        target = self.layout.poses(trajectories)[..., self.target_index, :]
        pusher = trajectories[..., self.layout.pusher_position]
        shape = (*trajectories.shape[:1], trajectories.shape[1] - 1, len(self.obstacles))
        target_clearance = np.empty(shape)
        pusher_clearance = np.empty(shape)
        for index, obstacle in enumerate(self.obstacles):
            if self.target_outline is None:
                target_clearance[..., index] = segment_obstacle_clearance(
                    target[:, :-1, :2], target[:, 1:, :2], self.target_radius, obstacle
                )
            else:
                target_clearance[..., index] = swept_outline_obstacle_clearance(
                    target[:, :-1], target[:, 1:], self.target_outline, obstacle
                )
            pusher_clearance[..., index] = segment_obstacle_clearance(
                pusher[:, :-1], pusher[:, 1:], self.pusher_radius, obstacle
            )
        return target_clearance, pusher_clearance

    def proximity(self, clearance: np.ndarray) -> np.ndarray:
        """f(c) of the module docstring, 1/m^2, for clearances c (m)."""
        value = 1.0 / np.maximum(clearance, self.min_clearance) ** 2
        if self.influence_distance is None:
            return value
        return np.maximum(value - 1.0 / self.influence_distance**2, 0.0)

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        if not self.obstacles:
            return np.zeros(trajectories.shape[0])
        target_clearance, pusher_clearance = self.clearances(trajectories)
        target_cost = self.proximity(target_clearance)
        pusher_cost = self.proximity(pusher_clearance)
        return (self.target_gain * target_cost + self.pusher_gain * pusher_cost).sum(axis=(1, 2))
