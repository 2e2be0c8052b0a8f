"""A pusher parked beside a target at the goal's edge: what the goal_distance hinge's
``hinge_inset`` and pusher_goal_side's ``behind_margin`` do there (config/planner.yaml).

The state is one ``test_mpc_node_tracking_loss`` ended in (CI, 2026-11-28): the target 1.1 mm
outside a 3 cm goal region, the pusher beside it, 4 controls of 0.25 s per plan. No plan of that
1 s horizon can push the target in from there, so with a free side the plan that stands still
is the cheapest for the rest of the goal. The configured ``hinge_inset`` keeps a goal from
getting there (the plan aims 1 cm past the edge: that test's goals, 0 of 24 parked); only a
``behind_margin`` gets it out once there, and it is 0 in the file because 0.02 m cost box runs
(``docs/planner_tuning.md``). The world here is the planner's own analytical model, and the
search has no time budget, so the re-plans are the same on any machine.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from parapush.physics.coarse_analytical import AnalyticalCoarseModel
from parapush.planning import shift_controls
from parapush.planning.stack_planner import PlannerSources, build_planner
from parapush.prediction import ModelConfig
from parapush.scene import GoalRegion, ObjectSpec, Pusher, Scene

GOAL = (0.2, 0.0)
PARKED = np.array([0.2036, 0.0774, 0.1723, 0.0140, -1.0748])  # pusher x, y; target x, y, yaw


def scene() -> Scene:
    return Scene(name="parked", pusher=Pusher(position=(-0.08, 0.0)),
                 objects=(ObjectSpec(name="puck", pose=(0.0, 0.0, 0.0)),), goal=GoalRegion(center=GOAL, radius=0.03))


def replan_from(start: np.ndarray, costs: dict, replans: int) -> list[float]:
    """Target-to-goal distances (m) after each of ``replans`` re-plans from ``start`` (pusher x,
    y; target x, y, yaw), each plan's first control run in the analytical model (the costs of
    ``config/planner.yaml`` with ``costs`` merged in)."""
    task = scene()
    sources = PlannerSources.load().with_overrides({
        "optimizer": {"control_duration": 0.25}, "costs": costs,
        "model": {"name": "coarse", "coarse_model": "analytical"}})
    world = AnalyticalCoarseModel(task, rotation=ModelConfig().analytical_rotation)
    state = np.zeros(task.layout.dimension)
    state[:5] = start
    distances = []
    with build_planner(task, sources, seed=0) as built:
        planner = built.planner
        planner.retune(dataclasses.replace(planner.settings, time_budget=None), planner.multifidelity)
        controls = np.zeros((planner.settings.horizon, 2))
        for _ in range(replans):
            proposals = built.loop.settings.proposals(task, state, planner.settings, built.loop.cost.route)
            plan = planner.optimize(state, controls, built.model, built.loop.cost, proposals=proposals).controls
            state = world.propagate(state[None], plan[:1], np.array([planner.settings.control_duration]))[0]
            controls = shift_controls(plan)
            distances.append(float(np.linalg.norm(state[2:4] - GOAL)))
    return distances


def test_a_behind_margin_brings_a_parked_pusher_back_and_it_pushes_the_target_in() -> None:
    distances = replan_from(PARKED, {"pusher_goal_side": {"behind_margin": 0.02}}, replans=16)
    assert min(distances) < 0.03, f"the target stayed out of the goal region: {np.round(distances, 4)}"


@pytest.mark.parametrize("costs", [
    {},  # the file's: the inset keeps a push from stopping at the edge, but does not get out of this state
    {"goal_distance": {"hinge_inset": 0.0}},  # before the inset
])
def test_without_a_behind_margin_the_plan_stands_still(costs) -> None:
    distances = replan_from(PARKED, costs, replans=6)
    np.testing.assert_allclose(distances, np.linalg.norm(PARKED[2:4] - GOAL), atol=1e-6)

