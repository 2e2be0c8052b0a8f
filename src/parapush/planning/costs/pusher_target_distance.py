"""Running cost: the gap between the pusher and the target (keeps the pusher at the task).

Not one of the papers' terms. With only the papers' terms the cost is flat in the
pusher's position whenever no predicted control touches the target, so a pusher that has
lost contact (slipped past the target's side) gets no signal to come back and drifts;
this small running term supplies it. With the gap g_n between the pusher's and the
target's surfaces (the target as a disc of its bounding radius)::

    J_gap = sum_{n=1}^{N} max(0, ||p_n - t_n|| - r_pusher - r_target)^2        (m^2)

It is 0 while the pusher touches the target, so it does not bias the push itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import check_batch, check_term_fields
from parapush.scene import Scene, StateLayout


@dataclass(frozen=True)
class PusherTargetDistance:
    """Sum over x_1..x_N of the squared pusher-target surface gap.

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object in the state.
        contact_distance: m, centre distance at contact (pusher radius + target bounding radius).
        weight: overall weight.
    """

    name: ClassVar[str] = "pusher_target_distance"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight",)

    layout: StateLayout
    target_index: int
    contact_distance: float
    weight: float = 1.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight")

    @classmethod
    def from_scene(cls, scene: Scene, *, weight: float = 1.0) -> PusherTargetDistance:
        target = scene.objects[scene.target_index]
        return cls(
            layout=scene.layout,
            target_index=scene.target_index,
            contact_distance=scene.pusher.radius + target.bounding_radius,
            weight=weight,
        )

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        states = trajectories[:, 1:]
        target = self.layout.poses(states)[..., self.target_index, :2]
        pusher = states[..., self.layout.pusher_position]
        gap = np.maximum(np.linalg.norm(pusher - target, axis=-1) - self.contact_distance, 0.0)
        return np.sum(gap**2, axis=1)
