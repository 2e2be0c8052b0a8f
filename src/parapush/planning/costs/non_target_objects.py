"""Running cost for the objects other than the target (journal, multi-object task).

The journal's task lets the pusher touch the other objects but fails when one of them
is pushed off the table or into the goal region. This term penalises

- moving them: the squared displacement of each non-target object's centre from x_0
  to x_N (m^2), and
- pushing them into the goal region: ``goal_entry_cost`` (in the same m^2 units) for
  each non-target object whose centre is inside the goal region at some state x_1..x_N,
- and into a *margin band* around it: with ``goal_entry_margin`` = m > 0, another
  ``goal_entry_cost`` for each non-target object that starts outside the goal grown by m
  (at x_0) and is inside it at some state x_1..x_N::

    d_i = min_{n >= 1} |c_i(n) - g|
    J_other = sum_{i != target} ||c_i(N) - c_i(0)||^2 + goal_entry_cost * (1[d_i <= r]
              + 1[|c_i(0) - g| > r + m and d_i <= r + m])

  The band keeps planned paths away from the goal's edge when predictions are uncertain
  (a coarse model beyond the first control, push noise). It charges *entering* the band,
  not being in it: charging every object inside the grown goal made each plan pay the same
  once an object was in the band (pushing it on into the goal cost nothing more: the
  realtime planner failed a held-out scene, ``new_clutter_1``, that way), and a graded charge
  across the band walled off tasks whose target must pass an object already in the band.
- and, with ``band_approach_cost`` = a > 0, pushing an object that starts inside the band
  closer to the goal: a times the fraction of the band's width it comes closer,
  ``a * max(0, |c_i(0) - g| - d_i) / m`` for each non-target object with
  ``r < |c_i(0) - g| <= r + m``. Only the approach is charged, never being there: a target
  that passes an object in the band without pushing it on pays nothing. Without it, once an
  object was in the band nothing kept a plan from pushing it to within a millimetre of the
  goal's edge, where the world's push noise took it in (box clutter on probe scenes).

Dropping them is charged by :mod:`~parapush.planning.costs.off_table`, which covers
every object. With a single object the term is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import CostConfigError, check_batch, check_term_fields
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
        goal_entry_margin: m, width of the margin band around the goal whose entry is charged
            too (0: none).
        band_approach_cost: m^2-equivalent charge per band width that an object starting in the
            band comes closer to the goal (0: none; needs ``goal_entry_margin`` > 0).
    """

    name: ClassVar[str] = "non_target_objects"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "goal_entry_cost", "goal_entry_margin", "band_approach_cost")

    layout: StateLayout
    target_index: int
    goal_center: tuple[float, float] | None
    goal_radius: float
    weight: float = 1.0
    goal_entry_cost: float = 1.0
    goal_entry_margin: float = 0.0
    band_approach_cost: float = 0.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight", "goal_entry_cost", "goal_entry_margin", "band_approach_cost")
        if self.band_approach_cost > 0 and self.goal_entry_margin == 0:
            raise CostConfigError(f"{self.name}.band_approach_cost: {self.band_approach_cost} charges approaches "
                                  f"within the margin band, but goal_entry_margin is 0 (no band)")

    @classmethod
    def from_scene(
        cls, scene: Scene, *, weight: float = 1.0, goal_entry_cost: float = 1.0, goal_entry_margin: float = 0.0,
        band_approach_cost: float = 0.0,
    ) -> NonTargetObjects:
        return cls(
            layout=scene.layout,
            target_index=scene.target_index,
            goal_center=None if scene.goal is None else scene.goal.center,
            goal_radius=0.0 if scene.goal is None else scene.goal.radius,
            weight=weight,
            goal_entry_cost=goal_entry_cost,
            goal_entry_margin=goal_entry_margin,
            band_approach_cost=band_approach_cost,
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
            goal = np.asarray(self.goal_center)
            closest = np.min(np.linalg.norm(centres[:, 1:] - goal, axis=-1), axis=1)  # (S, m)
            entered = closest <= self.goal_radius
            if self.goal_entry_margin > 0:
                grown = self.goal_radius + self.goal_entry_margin
                start = np.linalg.norm(centres[:, 0] - goal, axis=-1)  # (S, m)
                entered = entered.astype(int) + ((start > grown) & (closest <= grown))
                if self.band_approach_cost > 0:
                    in_band = (start > self.goal_radius) & (start <= grown)
                    approach = np.where(in_band, np.maximum(0.0, start - closest), 0.0)
                    total = total + self.band_approach_cost * np.sum(approach, axis=1) / self.goal_entry_margin
            total = total + self.goal_entry_cost * np.sum(entered, axis=1)
        return total
