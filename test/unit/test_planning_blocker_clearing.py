"""Clearing a movable object off the target's line near the goal (parapush.planning.blocker_clearing),
and both loops planning for its sub-goal while it runs."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import GluedPropagator, PropagatorWorld, initial_state, tiny_scene

from parapush.planning import CostFunction, MpcLoop, MpcSettings, OptimizerSettings, StochasticTrajectoryOptimizer
from parapush.planning.async_world import PropagatorPhysics, VirtualClockWorld
from parapush.planning.blocker_clearing import (
    CLEAR_FRACTION,
    GOAL_KEEPOUT,
    MAX_CLEARINGS,
    BlockerClearing,
    find_blocker,
    is_off_line,
)
from parapush.planning.pipelined_mpc import PipelinedMpcLoop, PipelineSettings
from parapush.planning.predictive_model import PropagatorRollout
from parapush.scene import Obstacle

# The target at (-0.15, 0), the goal at (0.15, 0) with radius 0.05: the line is the x axis.
GOAL = (0.15, 0.0)
COSTS = {"goal_distance": {"weight": 1.0, "outside_slope": 0.5}, "smoothness": {"weight": 0.1},
         "non_target_objects": {"weight": 1.0, "goal_entry_cost": 1.0, "goal_entry_margin": 0.02}}
REACH = {"line_offset": 0.02, "goal_reach": 0.12}


def scene_with(*others, goal_radius=0.05, obstacles=()):
    return tiny_scene(target_position=(-0.15, 0.0), goal=GOAL, goal_radius=goal_radius, others=others,
                      obstacles=obstacles)


def test_an_object_on_the_line_near_the_goal_blocks_and_gets_a_subgoal_beside_the_line() -> None:
    scene = scene_with((0.03, 0.005))
    blocker = find_blocker(scene, initial_state(scene), **REACH)
    assert blocker is not None and blocker.name == "other_0" and blocker.index == 1
    x, y = blocker.subgoal.center
    # pushed sideways, to the side it already leans to, off the line by 0.7 (r_t + r_j) + 3 cm
    assert x == pytest.approx(0.03)
    assert y == pytest.approx(CLEAR_FRACTION * 2 * 0.0512 + 0.03)
    assert np.hypot(x - GOAL[0], y - GOAL[1]) >= 0.05 + GOAL_KEEPOUT


@pytest.mark.parametrize(("position", "why"), [
    ((0.03, 0.03), "off the line"),
    ((-0.30, 0.0), "behind the target"),
    ((0.25, 0.0), "beyond the goal's centre"),
])
def test_objects_not_between_target_and_goal_on_the_line_do_not_block(position, why) -> None:
    scene = scene_with(position)
    assert find_blocker(scene, initial_state(scene), **REACH) is None, why


def test_an_object_on_the_line_far_from_the_goal_does_not_block() -> None:
    """The planner pushes it aside itself when there is room before the goal."""
    scene = tiny_scene(target_position=(-0.3, 0.0), goal=(0.3, 0.0), goal_radius=0.05, others=((-0.1, 0.0),))
    assert find_blocker(scene, initial_state(scene), **REACH) is None
    assert find_blocker(scene, initial_state(scene), line_offset=0.02, goal_reach=0.3) is not None


def test_the_nearest_blocker_to_the_goal_is_cleared_first() -> None:
    scene = scene_with((-0.02, 0.0), (0.05, 0.0))
    assert find_blocker(scene, initial_state(scene), **REACH).name == "other_1"


def test_the_subgoal_takes_the_side_whose_pre_push_point_is_free() -> None:
    lean_up = scene_with((0.03, 0.005))
    assert find_blocker(lean_up, initial_state(lean_up), **REACH).subgoal.center[1] > 0
    # another object where the pusher would stand to push it up: the other side
    crowded = scene_with((0.03, 0.005), (0.03, -0.11))
    assert find_blocker(crowded, initial_state(crowded), **REACH).subgoal.center[1] < 0


def test_the_subgoal_keeps_clear_of_obstacles_and_the_goal() -> None:
    wall = Obstacle(name="wall", shape="box", half_extents=(0.2, 0.02), pose=(0.03, 0.13, 0.0))
    scene = scene_with((0.03, 0.005), obstacles=(wall,))
    assert find_blocker(scene, initial_state(scene), **REACH).subgoal.center[1] < 0
    # near the goal the sub-goal moves further out until it is GOAL_KEEPOUT beyond the region
    near = scene_with((0.09, 0.0), goal_radius=0.06)
    x, y = find_blocker(near, initial_state(near), **REACH).subgoal.center
    assert np.hypot(x - GOAL[0], y - GOAL[1]) >= 0.06 + GOAL_KEEPOUT


def test_a_scene_without_a_goal_is_refused_by_name() -> None:
    import dataclasses

    scene = dataclasses.replace(scene_with((0.03, 0.0)), goal=None)
    with pytest.raises(ValueError, match="scene: 'tiny' has no goal region"):
        find_blocker(scene, initial_state(scene), **REACH)


def test_cost_for_scene_equals_the_cost_built_for_that_scene_but_the_kept_terms() -> None:
    scene = scene_with((0.03, 0.005))
    blocker = find_blocker(scene, initial_state(scene), **REACH)
    subgoal = __import__("dataclasses").replace(scene, target=blocker.name, goal=blocker.subgoal)
    task_cost = CostFunction.from_config(scene, COSTS)
    assert task_cost.for_scene(subgoal) == CostFunction.from_config(subgoal, COSTS)
    kept = task_cost.for_scene(subgoal, keep=("non_target_objects",))
    assert kept.term("non_target_objects") is task_cost.term("non_target_objects")
    assert kept.term("goal_distance") == CostFunction.from_config(subgoal, COSTS).term("goal_distance")
    with pytest.raises(KeyError, match="keep: no cost term"):
        task_cost.for_scene(subgoal, keep=("off_table",))


def test_a_clearing_plans_for_the_subgoal_until_the_blocker_is_off_the_line() -> None:
    scene = scene_with((0.03, 0.005))
    clearing = BlockerClearing(scene, clear_controls=6, **REACH)
    task_cost = CostFunction.from_config(scene, COSTS)
    assert clearing.planning_scene() is scene and clearing.cost(task_cost) is task_cost
    state = initial_state(scene)
    event = clearing.update(state, 0)
    assert "'other_0' stands on the target's line near the goal" in event
    planning = clearing.planning_scene()
    assert planning.target == "other_0" and planning.goal == clearing.active.subgoal
    assert clearing.cost(task_cost).term("non_target_objects") is task_cost.term("non_target_objects")
    assert clearing.cost(task_cost) is clearing.cost(task_cost)  # built once per task cost
    assert clearing.update(state, 1) == "" and clearing.clearing_name == "other_0"
    moved = state.copy()
    moved[scene.layout.object_pose(1)][1] = 0.08
    assert is_off_line(scene, moved, 1)
    assert "done (it is off the target's line)" in clearing.update(moved, 2)
    assert clearing.planning_scene() is scene and clearing.clearing_name == ""
    # at most MAX_CLEARINGS per task
    assert clearing.update(state, 3) == "" and clearing.clearings == MAX_CLEARINGS


def test_a_clearing_ends_after_its_controls_and_a_disabled_one_never_starts() -> None:
    scene = scene_with((0.03, 0.005))
    state = initial_state(scene)
    clearing = BlockerClearing(scene, clear_controls=2, **REACH)
    clearing.update(state, 4)
    assert clearing.update(state, 5) == ""
    assert "done (after 2 controls)" in clearing.update(state, 6)
    disabled = MpcSettings().blocker_clearing(scene)
    assert not disabled.enabled and disabled.update(state, 0) == "" and disabled.planning_scene() is scene


def test_mpc_settings_validate_the_blocker_fields() -> None:
    with pytest.raises(ValueError, match="blocker_line_offset"):
        MpcSettings(blocker_line_offset=-0.01)
    with pytest.raises(ValueError, match="blocker_clear_controls"):
        MpcSettings(blocker_clear_controls=0)
    with pytest.raises(ValueError, match="clear_blockers"):
        MpcSettings(clear_blockers="yes")


def _blocker_world(scene):
    """Pusher and blocker glued: only a plan for the blocker's sub-goal moves it off the line."""
    return GluedPropagator(scene.layout, 1)


@pytest.mark.parametrize("clear", [True, False])
def test_the_sequential_loop_pushes_the_blocker_to_its_subgoal_first(clear) -> None:
    scene = scene_with((0.03, 0.005))
    propagator = _blocker_world(scene)
    world = PropagatorWorld(propagator, initial_state(scene))
    steps = []
    loop = MpcLoop(scene, StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=3, seed=0)),
                   PropagatorRollout(propagator), CostFunction.from_config(scene, COSTS),
                   MpcSettings(max_controls=6, clear_blockers=clear))
    result = loop.run(world, callback=steps.append)
    if not clear:
        assert result.blocker_clearings == 0 and all(step.clearing == "" for step in steps)
        return
    assert result.blocker_clearings == 1
    assert steps[0].clearing == "other_0" and "pushing it to" in steps[0].clearing_event
    ended = [step for step in steps if "done" in step.clearing_event]
    assert ended and ended[0].clearing == ""
    assert is_off_line(scene, result.states[ended[0].step], 1)


def test_the_pipelined_loop_pushes_the_blocker_to_its_subgoal_first() -> None:
    scene = scene_with((0.03, 0.005))
    propagator = _blocker_world(scene)
    world = VirtualClockWorld(PropagatorPhysics(propagator, initial_state(scene)))
    loop = PipelinedMpcLoop(scene, StochasticTrajectoryOptimizer(OptimizerSettings(max_iterations=3, seed=0)),
                            PropagatorRollout(propagator), CostFunction.from_config(scene, COSTS),
                            MpcSettings(max_controls=6, clear_blockers=True), PipelineSettings())
    result = loop.run(world)
    assert result.blocker_clearings == 1
    assert result.steps[0].clearing == "other_0" and "pushing it to" in result.steps[0].clearing_event
    ended = [step for step in result.steps if "done" in step.clearing_event]
    assert ended, [step.clearing_event for step in result.steps]
    assert any(is_off_line(scene, state, 1) for state in result.states)
