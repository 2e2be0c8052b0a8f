"""Running cost for the objects other than the target (journal, multi-object task).

The journal's task lets the pusher touch the other objects but fails when one of them
is pushed off the table or into the goal region. This term penalises

- moving them: the squared displacement of each non-target object's centre from x_0
  to x_N (m^2), and
- pushing them into the goal region: ``goal_entry_cost`` (in the same m^2 units) for
  each non-target object whose centre is inside the goal region at some state x_1..x_N,
- and approaching it: within the *margin band* r < d <= r + ``goal_entry_margin`` (m,
  default 0: no band), a charge that grows linearly from 0 at the band's outer edge to
  ``goal_margin_cost`` at the goal's edge, with d_i = min_n |c_i(n) - g|::

    J_other = sum_{i != target} ||c_i(N) - c_i(0)||^2 + goal_entry_cost * 1[d_i <= r]
              + goal_margin_cost * clip((r + margin - d_i) / margin, 0, 1)

  The band keeps planned paths away from the goal's edge when predictions are uncertain
  (a coarse model beyond the first control, push noise). It is graded, not a constant charge
  for the grown goal: with a constant, an object already in the band costs every plan the
  same (no plan is told to keep it from going deeper, so it was pushed into the goal), and
  tasks whose only solutions leave another object a few cm outside the goal (the target in
  the goal pushes its neighbours there) looked as bad as putting it in the goal: the realtime
  planner failed all seeds of such a scene (``new_clutter_1``) that the ISRR planner solved.

Dropping them is charged by :mod:`~parapush.planning.costs.off_table`, which covers
every object. With a single object the term is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import check_batch, check_term_fields
from parapush.scene import Scene, StateLayout


@dataclass(frozen=True)
class NonTargetObjects:
    """Displacement of the non-target objects plus a charge per object entering or nearing the goal.

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object (excluded).
        goal_center: (x, y) m, or None when the scene has no goal (no entry charge).
        goal_radius: m.
        weight: overall weight.
        goal_entry_cost: m^2-equivalent charge per non-target object entering the goal.
        goal_entry_margin: m, width of the margin band around the goal (0: none).
        goal_margin_cost: m^2-equivalent charge at the goal's edge, falling linearly to 0 at
            the band's outer edge.
    """

    name: ClassVar[str] = "non_target_objects"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "goal_entry_cost", "goal_entry_margin", "goal_margin_cost")

    layout: StateLayout
    target_index: int
    goal_center: tuple[float, float] | None
    goal_radius: float
    weight: float = 1.0
    goal_entry_cost: float = 1.0
    goal_entry_margin: float = 0.0
    goal_margin_cost: float = 0.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight", "goal_entry_cost", "goal_entry_margin", "goal_margin_cost")

    @classmethod
    def from_scene(
        cls,
        scene: Scene,
        *,
        weight: float = 1.0,
        goal_entry_cost: float = 1.0,
        goal_entry_margin: float = 0.0,
        goal_margin_cost: float = 0.0,
    ) -> NonTargetObjects:
        return cls(
            layout=scene.layout,
            target_index=scene.target_index,
            goal_center=None if scene.goal is None else scene.goal.center,
            goal_radius=0.0 if scene.goal is None else scene.goal.radius,
            weight=weight,
            goal_entry_cost=goal_entry_cost,
            goal_entry_margin=goal_entry_margin,
            goal_margin_cost=goal_margin_cost,
        )

    @property
    def other_indices(self) -> np.ndarray:
        return np.array([i for i in range(self.layout.object_count) if i != self.target_index], dtype=int)

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        others = self.other_indices
        if others.size == 0:
            return np.zeros(trajectories.shape[0])
        centres = self.layout.poses(trajectories)[:, :, others, :2]  # (S, N+1, m, 2)
        displacement = centres[:, -1] - centres[:, 0]
        total = np.einsum("smk,smk->s", displacement, displacement)
        if self.goal_center is not None:
            closest = np.min(np.linalg.norm(centres[:, 1:] - np.asarray(self.goal_center), axis=-1), axis=1)  # (S, m)
            total = total + self.goal_entry_cost * np.count_nonzero(closest <= self.goal_radius, axis=1)
            if self.goal_entry_margin > 0:
                depth = (self.goal_radius + self.goal_entry_margin - closest) / self.goal_entry_margin
                total = total + self.goal_margin_cost * np.clip(depth, 0.0, 1.0).sum(axis=1)
        return total
