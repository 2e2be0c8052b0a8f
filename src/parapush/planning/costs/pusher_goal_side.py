"""Running cost: the pusher on the goal's side of the target (keeps it behind the target).

Not one of the papers' terms. A pusher can only push the target away from itself, so one that
has slid round the target to the goal's side (between the target and the goal) must go back
round before the target can move towards the goal again; within the 4-control horizon that
detour rarely lowers the terminal cost, and the other terms do not see the side at all (the gap
term is 0 on any side). Measured in the in-stack bench (issue 28): on the obstacle scenes drawn
with seed 2030, 4 of 8 goals ended MAX_CONTROLS with the pusher parked 1-5 cm past the target
on the goal's side, the cost flat for 8-10 controls. With t_n the target's and p_n the pusher's
position and u_n the unit vector from t_n to the goal centre g::

    J_side = sum_{n=1}^{N} max(0, (p_n - t_n) . u_n + m_b)^2                  (m^2)

with m_b the ``behind_margin`` (m). With m_b = 0 it is 0 while the pusher is anywhere behind or
beside the target (a sideways push is free); with m_b > 0 a pusher beside the target costs m_b^2
per state, and it is free only at least m_b behind the target's centre. That margin is what gets
a pusher that lost contact beside the target near the goal back behind it: there the detour
costs smoothness and lowers no other term within the horizon, so the plan that stands still is
the cheapest and stays so (``test/unit/test_planning_parked_pusher.py``: the state one goal of
``test_mpc_node_tracking_loss`` parked in, the target 1.1 mm outside the region, for the last 17
of its 30 controls). ``config/planner.yaml`` keeps it 0: at 0.02 m it also charged a box pushed
near its corner from the side, and a box behind an obstacle failed more often
(``docs/planner_tuning.md``). 0 where the target is at the goal centre (u undefined). With
``route_margin`` a number of metres, u_n is the direction of the target's route round the static obstacles
(:meth:`~parapush.planning.goal_route.GoalRoute.direction`: towards g where the straight path is
clear), so that behind an obstacle "ahead" means ahead along the way round it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from parapush.planning.costs.cost_term import CostConfigError, check_batch, check_term_fields
from parapush.planning.goal_route import GoalRoute, goal_route
from parapush.scene import Scene, StateLayout


@dataclass(frozen=True)
class PusherGoalSide:
    """Sum over x_1..x_N of the squared distance the pusher is ahead of the target towards the goal.

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object in the state.
        goal_center: (x, y) m.
        weight: overall weight.
        route_margin: m, the target's margin on its route round the obstacles (None: straight
            towards the goal, as without obstacles).
        route: the route (built by :meth:`from_scene`; None: straight).
        behind_margin: m_b, m: how far behind the target's centre (along u) the pusher must be
            to cost nothing (0: anywhere not ahead of the centre is free).
    """

    name: ClassVar[str] = "pusher_goal_side"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "route_margin", "behind_margin")

    layout: StateLayout
    target_index: int
    goal_center: tuple[float, float]
    weight: float = 1.0
    route_margin: float | None = None
    route: GoalRoute | None = field(default=None, compare=False, repr=False)
    behind_margin: float = 0.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight", "behind_margin")
        if self.route_margin is not None:
            check_term_fields(self, "route_margin")

    @classmethod
    def from_scene(cls, scene: Scene, *, weight: float = 1.0, route_margin: float | None = None,
                   behind_margin: float = 0.0) -> PusherGoalSide:
        if scene.goal is None:
            raise CostConfigError(f"{cls.name}: scene {scene.name!r} has no goal region")
        term = cls(layout=scene.layout, target_index=scene.target_index, goal_center=scene.goal.center,
                   weight=weight, route_margin=route_margin, behind_margin=behind_margin)
        return dataclasses.replace(term, route=goal_route(scene, term.route_margin))

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        states = trajectories[:, 1:]
        target = self.layout.poses(states)[..., self.target_index, :2]
        pusher = states[..., self.layout.pusher_position]
        towards_goal = np.asarray(self.goal_center) - target
        length = np.linalg.norm(towards_goal, axis=-1)
        if self.route is not None:  # along the route: a unit vector (0 at the goal centre)
            towards_goal, length = self.route.direction(target), np.where(length > 1e-9, 1.0, 0.0)
        ahead = np.einsum("snc,snc->sn", pusher - target, towards_goal) / np.maximum(length, 1e-9)
        ahead = np.where(length > 1e-9, np.maximum(ahead + self.behind_margin, 0.0), 0.0)
        return np.sum(ahead**2, axis=1)
