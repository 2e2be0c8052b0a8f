"""Terminal cost: distance of the target object to the goal centre (ISRR J_N).

For the target's final position p_N (m) and the goal centre g, radius r::

    J_N = d(p_N)^2  +  outside_slope * max(0, d(p_N) - max(r - hinge_inset, 0))

with d the straight-line distance ||p_N - g|` (``route_margin`` null: the paper's terminal cost,
m^2), or, with ``route_margin`` a number of metres, the *route distance* round the static
obstacles (:class:`~parapush.planning.goal_route.GoalRoute`: equal to the straight-line
distance wherever the target's straight path to the goal is clear, longer behind an
obstacle, so that pushing the target round it lowers the cost). The optional hinge (``outside_slope``,
m^2 per m) keeps a constant pull towards the region while the target is outside it,
where the quadratic's pull fades near the boundary; it is 0 inside the region.

Scale (config/planner.yaml: 0.5): near the boundary the quadratic's pull, 2 r ~ 0.06 m^2 per m,
is worth less than turning the pusher round: the smoothness term charges at least
(delta v)^2 / N for a change of velocity delta v spread over the N controls, 2.5e-3 for
0.1 m/s and N = 4. With the old 0.05 a target 5 mm outside the region was worth 2.5e-4 of
hinge, a tenth of that: a pusher that had passed the target kept going and the task stalled
at the region's edge for the rest of the goal (issue 28's demo run, and the CI failure of the
tracking-loss test). With 0.5 the same 5 mm outside is worth the turn.

``intermediate_weight`` (0 in config/planner.yaml and both presets: the paper's terminal cost)
adds that weight times the mean of the same cost over the states between the start and the
horizon's end (p_1 .. p_{N-1}). The terminal cost alone prices a plan that gets the target to the
goal at its 2nd control like one that gets it there at its 4th, smoothness favours the slower one,
and as each re-plan starts one control later the push is put off again (measured: a box target
7-10 cm from the goal crept 1-1.5 cm per control while the plans predicted arrival within the
horizon). With 0.5 the ``realtime`` planner's tasks ended in 20-30 % fewer controls, but with no
more successes, and two runs on the papers' obstacle scenes parked the target outside the region
(``docs/planner_tuning.md``): an option for open tables, not a default.

``arrival_bonus`` (m^2 per control; 0 in the presets: the paper's terminal cost) prices a plan
that gets the target into the goal region before the horizon's end by its first state there:
where the target's centre is in the region at p_k (k < N, the same test as the task's success),
the cost is the smaller of the terminal one and that state's cost less ``arrival_bonus`` for each
control the plan has left after it, ``cost(p_k) - arrival_bonus * (N - k)``. The task ends
at the control boundary where the target is observed in the region, so what a plan does after
that state is never executed; a plan that does not enter the region before its end costs what
it did (exactly), so waiting outside is not rewarded (unlike ``intermediate_weight``, which
also prices a target that has to go round or back off before it can be pushed in).

``hinge_inset`` (m; config/planner.yaml: 0.01) starts the hinge that far inside the region's
edge, so that the plan aims at the region shrunk by it. With the hinge at the edge, a target
0.1-1 mm outside the region was worth 5e-5 to 5e-4, a tenth of the turn again: the tracking-loss
test still ended 2 goals of 25 with the target parked 0.7 and 1.1 mm outside the region (the
second for its last 17 controls). With 0.01 a target at the edge is worth 5e-3, and 0 of 24
ended so (``docs/planner_tuning.md``).
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
class GoalDistance:
    """Terminal squared distance of the target to the goal centre, plus an outside hinge (and,
    with ``intermediate_weight``, the same for the states before the last).

    Attributes:
        layout: state layout of the scene.
        target_index: index of the target object in the state.
        goal_center: (x, y) m.
        goal_radius: m.
        weight: the paper's terminal weight w.
        outside_slope: m, weight of the hinge max(0, d - r + hinge_inset) relative to d^2 (0:
            paper's cost).
        hinge_inset: m, how far inside the region's edge the hinge starts (0: at the edge; at
            most r: a radius under it starts the hinge at the centre).
        intermediate_weight: weight of the mean cost of the states p_1 .. p_{N-1} relative to
            the final state's (0: the paper's terminal cost).
        arrival_bonus: m^2 taken off per control left after the first state p_k (k < N) with the
            target in the goal region, whose cost then stands for the plan's if lower (0: the
            paper's terminal cost; module docstring).
        route_margin: m added to the target's bounding radius for its route round the obstacles
            (None: the straight-line distance, the paper's).
        route: the route (built by :meth:`from_scene`; None: straight line, as without obstacles).
    """

    name: ClassVar[str] = "goal_distance"
    PARAMETERS: ClassVar[tuple[str, ...]] = ("weight", "outside_slope", "route_margin", "hinge_inset",
                                             "intermediate_weight", "arrival_bonus")

    layout: StateLayout
    target_index: int
    goal_center: tuple[float, float]
    goal_radius: float
    weight: float = 1.0
    outside_slope: float = 0.0
    route_margin: float | None = None
    route: GoalRoute | None = field(default=None, compare=False, repr=False)
    hinge_inset: float = 0.0
    intermediate_weight: float = 0.0
    arrival_bonus: float = 0.0

    def __post_init__(self) -> None:
        check_term_fields(self, "weight", "outside_slope", "hinge_inset", "intermediate_weight", "arrival_bonus")
        check_term_fields(self, "goal_radius", strict=True)
        if self.route_margin is not None:
            check_term_fields(self, "route_margin")

    @classmethod
    def from_scene(cls, scene: Scene, *, weight: float = 1.0, outside_slope: float = 0.0,
                   route_margin: float | None = None, hinge_inset: float = 0.0,
                   intermediate_weight: float = 0.0, arrival_bonus: float = 0.0) -> GoalDistance:
        if scene.goal is None:
            raise CostConfigError(f"{cls.name}: scene {scene.name!r} has no goal region")
        term = cls(
            layout=scene.layout,
            target_index=scene.target_index,
            goal_center=scene.goal.center,
            goal_radius=scene.goal.radius,
            weight=weight,
            outside_slope=outside_slope,
            route_margin=route_margin,
            hinge_inset=hinge_inset,
            intermediate_weight=intermediate_weight,
            arrival_bonus=arrival_bonus,
        )
        return dataclasses.replace(term, route=goal_route(scene, term.route_margin))

    def distances(self, trajectories: np.ndarray) -> np.ndarray:
        """Distance (S,) m of the target's final position to the goal centre (along the route)."""
        return self._distances(trajectories[:, -1])

    def _distances(self, states: np.ndarray) -> np.ndarray:
        """Distance (...,) m of the target in ``states`` (..., D) to the goal centre (along the route)."""
        position = self.layout.poses(states)[..., self.target_index, :2]
        if self.route is not None:
            return self.route.distance(position)
        return np.linalg.norm(position - np.asarray(self.goal_center), axis=-1)

    def _cost(self, distance: np.ndarray) -> np.ndarray:
        hinge_start = max(self.goal_radius - self.hinge_inset, 0.0)
        return distance**2 + self.outside_slope * np.maximum(distance - hinge_start, 0.0)

    def evaluate(self, trajectories: np.ndarray, controls: np.ndarray) -> np.ndarray:
        trajectories, _ = check_batch(trajectories, controls, self.layout.dimension)
        cost = self._cost(self.distances(trajectories))
        if self.intermediate_weight and trajectories.shape[1] > 2:
            cost = cost + self.intermediate_weight * self._cost(self._distances(trajectories[:, 1:-1])).mean(axis=-1)
        if self.arrival_bonus and trajectories.shape[1] > 2:
            cost = np.minimum(cost, self._arrival_costs(trajectories[:, 1:-1]))
        return cost

    def _arrival_costs(self, early: np.ndarray) -> np.ndarray:
        """(S,) the cost of each plan's first state among ``early`` (S, N-1, D), p_1 .. p_{N-1}, with
        the target's centre in the goal region, less ``arrival_bonus`` per control left after it
        (+inf where there is none)."""
        position = self.layout.poses(early)[..., self.target_index, :2]
        inside = np.linalg.norm(position - np.asarray(self.goal_center), axis=-1) <= self.goal_radius
        left = np.arange(early.shape[1], 0, -1)  # N - k for k = 1 .. N-1
        costs = np.where(inside, self._cost(self._distances(early)) - self.arrival_bonus * left, np.inf)
        first = np.argmax(inside, axis=-1)
        return np.take_along_axis(costs, first[:, None], axis=-1)[:, 0]
