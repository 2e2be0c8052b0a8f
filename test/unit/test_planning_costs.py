"""Cost terms on hand-built trajectories with hand-checked values."""

from __future__ import annotations

import numpy as np
import pytest
from test_planning_fixtures import initial_state, tiny_scene

from parapush.planning.costs import (
    CostConfigError,
    CostFunction,
    GoalDistance,
    NonTargetObjects,
    ObstacleProximity,
    OffTable,
    PusherGoalSide,
    PusherTargetDistance,
    Smoothness,
)
from parapush.scene import Obstacle

HORIZON = 4


def static_batch(scene, state, samples=1):
    """Trajectories (S, N+1, D) that stay at ``state`` and zero controls (S, N, 2)."""
    trajectories = np.tile(np.asarray(state, dtype=float), (samples, HORIZON + 1, 1))
    return trajectories, np.zeros((samples, HORIZON, 2))


def set_target(scene, trajectories, xy, steps=slice(None)):
    pose = scene.layout.object_pose(scene.target_index)
    trajectories[:, steps, pose.start : pose.start + 2] = xy


# -- goal distance ----------------------------------------------------------------------
def test_goal_distance_is_zero_with_the_target_at_the_goal_centre() -> None:
    scene = tiny_scene(goal=(0.15, 0.05))
    trajectories, controls = static_batch(scene, initial_state(scene))
    set_target(scene, trajectories, (0.15, 0.05), steps=-1)
    term = GoalDistance.from_scene(scene, outside_slope=0.5)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.0, abs=1e-15)


def test_goal_distance_uses_the_final_state_and_the_outside_hinge() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05)
    trajectories, controls = static_batch(scene, initial_state(scene), samples=2)
    set_target(scene, trajectories, (-0.3, -0.3), steps=slice(0, -1))  # earlier states do not count
    set_target(scene, trajectories[:1], (0.25, 0.05), steps=-1)  # 0.1 m from the centre
    set_target(scene, trajectories[1:], (0.15, 0.08), steps=-1)  # 0.03 m: inside the region
    values = GoalDistance.from_scene(scene, outside_slope=0.5).evaluate(trajectories, controls)
    np.testing.assert_allclose(values, [0.1**2 + 0.5 * (0.1 - 0.05), 0.03**2], rtol=1e-12)
    paper = GoalDistance.from_scene(scene).evaluate(trajectories, controls)
    np.testing.assert_allclose(paper, [0.01, 0.0009], rtol=1e-12)


def test_goal_distance_hinge_inset_starts_the_hinge_inside_the_region() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05)
    trajectories, controls = static_batch(scene, initial_state(scene), samples=3)
    set_target(scene, trajectories[0:1], (0.15, 0.09), steps=-1)  # 0.04 m: inside the region, past the inset edge
    set_target(scene, trajectories[1:2], (0.15, 0.07), steps=-1)  # 0.02 m: inside the shrunk region
    set_target(scene, trajectories[2:3], (0.25, 0.05), steps=-1)  # 0.1 m: outside
    values = GoalDistance.from_scene(scene, outside_slope=0.5, hinge_inset=0.02).evaluate(trajectories, controls)
    np.testing.assert_allclose(values, [0.04**2 + 0.5 * 0.01, 0.02**2, 0.1**2 + 0.5 * 0.07], rtol=1e-12)
    # an inset over the radius starts the hinge at the centre: 0.5 d on top of d^2
    cone = GoalDistance.from_scene(scene, outside_slope=0.5, hinge_inset=0.2).evaluate(trajectories, controls)
    np.testing.assert_allclose(cone, [0.04**2 + 0.02, 0.02**2 + 0.01, 0.1**2 + 0.05], rtol=1e-12)
    with pytest.raises(CostConfigError, match="goal_distance.hinge_inset"):
        GoalDistance.from_scene(scene, hinge_inset=-0.01)


def test_goal_distance_intermediate_weight_prices_the_states_before_the_last() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05)
    trajectories, controls = static_batch(scene, initial_state(scene), samples=2)
    set_target(scene, trajectories, (0.35, 0.05), steps=slice(0, -1))  # 0.2 m out before the end ...
    set_target(scene, trajectories, (0.15, 0.05), steps=-1)  # ... both end at the centre
    set_target(scene, trajectories[1:], (0.15, 0.05), steps=slice(2, -1))  # the second gets there at step 2
    term = GoalDistance.from_scene(scene, outside_slope=0.5, intermediate_weight=0.5)
    late = 0.5 * (0.2**2 + 0.5 * 0.15)  # steps 1-3 (the mean of the states between start and end) all out
    early = 0.5 * (0.2**2 + 0.5 * 0.15) / 3  # only step 1 out
    np.testing.assert_allclose(term.evaluate(trajectories, controls), [late, early], rtol=1e-12)
    # 0 (the default): the paper's terminal cost, the earlier states do not count
    np.testing.assert_array_equal(GoalDistance.from_scene(scene, outside_slope=0.5).evaluate(trajectories, controls),
                                  [0.0, 0.0])
    with pytest.raises(CostConfigError, match="goal_distance.intermediate_weight"):
        GoalDistance.from_scene(scene, intermediate_weight=-0.1)


def test_goal_distance_arrival_bonus_prices_a_plan_by_its_first_state_in_the_goal() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05)
    trajectories, controls = static_batch(scene, initial_state(scene), samples=4)
    set_target(scene, trajectories, (0.35, 0.05), steps=slice(0, -1))  # 0.2 m out before the end ...
    set_target(scene, trajectories, (0.17, 0.05), steps=-1)  # ... all end 2 cm from the centre
    set_target(scene, trajectories[1:2], (0.19, 0.05), steps=2)  # in at step 2 (4 cm), out again at 3
    set_target(scene, trajectories[2:3], (0.19, 0.05), steps=slice(1, -1))  # in at step 1 (4 cm), stays
    set_target(scene, trajectories[3:4], (0.22, 0.05), steps=slice(1, -1))  # 7 cm: not in the region
    slope = dict(outside_slope=0.5, hinge_inset=0.02)
    term = GoalDistance.from_scene(scene, **slope, arrival_bonus=0.003)
    terminal, first_in = 0.02**2, 0.04**2 + 0.5 * 0.01  # the hinge starts at 3 cm
    np.testing.assert_allclose(term.evaluate(trajectories, controls),
                               [terminal, min(terminal, first_in - 0.003 * (HORIZON - 2)),
                                min(terminal, first_in - 0.003 * (HORIZON - 1)), terminal], rtol=1e-12)
    assert term.evaluate(trajectories, controls)[2] < terminal  # arriving 3 controls early beats the end state
    # 0 (the default): the paper's terminal cost exactly
    plain = GoalDistance.from_scene(scene, **slope).evaluate(trajectories, controls)
    np.testing.assert_allclose(plain, np.full(4, terminal), rtol=1e-12)
    np.testing.assert_array_equal(term.evaluate(trajectories[[0, 3]], controls[[0, 3]]), plain[[0, 3]])
    with pytest.raises(CostConfigError, match="goal_distance.arrival_bonus"):
        GoalDistance.from_scene(scene, arrival_bonus=-0.001)


def test_goal_distance_needs_a_goal() -> None:
    scene = tiny_scene()
    from dataclasses import replace

    with pytest.raises(CostConfigError, match="goal_distance: scene 'tiny' has no goal"):
        GoalDistance.from_scene(replace(scene, goal=None))


# -- obstacle proximity -----------------------------------------------------------------
def obstacle_scene():
    return tiny_scene(obstacles=(Obstacle(name="post", radius=0.0375, pose=(0.0, 0.0, 0.0)),))


def test_obstacle_proximity_of_the_pusher_at_0_1_m_from_the_surface() -> None:
    scene = obstacle_scene()
    state = initial_state(scene)
    state[0:2] = (0.0, 0.0375 + 0.0145 + 0.1)  # pusher surface 0.1 m from the obstacle surface
    trajectories, controls = static_batch(scene, state)
    term = ObstacleProximity.from_scene(scene, target_gain=0.0)
    # one 1 / 0.1^2 per control of the horizon
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(HORIZON * 100.0, rel=1e-9)


def test_obstacle_proximity_of_the_target_and_gains() -> None:
    scene = obstacle_scene()
    state = initial_state(scene)
    state[0:2] = (0.0, 0.0375 + 0.0145 + 0.1)
    set_target(scene, state[None, None], (-(0.0375 + 0.0512 + 0.05), 0.0))  # target 0.05 m away
    trajectories, controls = static_batch(scene, state)
    term = ObstacleProximity.from_scene(scene, target_gain=2.0, pusher_gain=0.5)
    expected = HORIZON * (2.0 / 0.05**2 + 0.5 / 0.1**2)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(expected, rel=1e-9)


def test_obstacle_proximity_is_swept_along_each_control() -> None:
    """A pusher jumping over the obstacle between two states still pays the contact cost."""
    scene = obstacle_scene()
    state = initial_state(scene)
    trajectories, controls = static_batch(scene, state)
    trajectories[0, :, 0:2] = [[-0.1, 0.0], [0.1, 0.0], [0.2, 0.0], [0.3, 0.0], [0.4, 0.0]]
    term = ObstacleProximity.from_scene(scene, target_gain=0.0, min_clearance=0.002)
    value = term.evaluate(trajectories, controls)[0]
    later = [0.1 - 0.052, 0.2 - 0.052, 0.3 - 0.052]  # closest approach of the next segments
    assert value == pytest.approx(1 / 0.002**2 + sum(1 / c**2 for c in later), rel=1e-9)


def test_obstacle_proximity_box_obstacle_face_distance() -> None:
    box = Obstacle(name="crate", shape="box", half_extents=(0.05, 0.1), pose=(0.0, 0.0, np.pi / 2))
    scene = tiny_scene(obstacles=(box,))
    state = initial_state(scene)
    state[0:2] = (0.0, 0.05 + 0.0145 + 0.04)  # rotated 90 deg: its half extent along y is 0.05
    trajectories, controls = static_batch(scene, state)
    value = ObstacleProximity.from_scene(scene, target_gain=0.0).evaluate(trajectories, controls)[0]
    assert value == pytest.approx(HORIZON / 0.04**2, rel=1e-9)


def test_obstacle_proximity_without_obstacles_is_zero() -> None:
    scene = tiny_scene()
    trajectories, controls = static_batch(scene, initial_state(scene), samples=3)
    np.testing.assert_array_equal(ObstacleProximity.from_scene(scene).evaluate(trajectories, controls), 0.0)


# -- smoothness -------------------------------------------------------------------------
def test_smoothness_of_a_known_sequence_including_the_previous_control() -> None:
    scene = tiny_scene()
    trajectories, _ = static_batch(scene, initial_state(scene))
    controls = np.array([[[0.1, 0.0], [0.1, 0.0], [0.0, 0.1], [0.0, 0.0]]])
    term = Smoothness.from_scene(scene)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.0 + 0.02 + 0.01)
    with_previous = term.with_previous_control(np.array([0.0, 0.0]))
    assert with_previous.evaluate(trajectories, controls)[0] == pytest.approx(0.01 + 0.0 + 0.02 + 0.01)
    moving = term.with_previous_control(np.array([0.1, 0.0]))
    assert moving.evaluate(trajectories, controls)[0] == pytest.approx(0.03)
    assert term.previous_control is None  # frozen: copies only


# -- off table --------------------------------------------------------------------------
def test_off_table_costs_the_constant_once_per_dropped_object() -> None:
    scene = tiny_scene(others=((0.1, 0.3),))
    trajectories, controls = static_batch(scene, initial_state(scene), samples=3)
    layout = scene.layout
    # sample 0: target past the x edge (half length 0.4) at one state only, then back
    trajectories[0, 2, layout.object_pose(0).start] = 0.41
    # sample 1: both objects off the table (y edge at 0.5)
    trajectories[1, 3:, layout.object_pose(0).start + 1] = -0.52
    trajectories[1, 4, layout.object_pose(1).start + 1] = 0.6
    term = OffTable.from_scene(scene, weight=7.0)
    np.testing.assert_array_equal(term.evaluate(trajectories, controls), [1.0, 2.0, 0.0])
    cost = CostFunction((term,))
    np.testing.assert_array_equal(cost.evaluate(trajectories, controls), [7.0, 14.0, 0.0])
    inside = OffTable.from_scene(scene, margin=0.15)  # |y| = 0.3 <= 0.5 - 0.15 = 0.35: on the table
    assert inside.evaluate(trajectories[2:], controls[2:])[0] == 0.0
    strict = OffTable.from_scene(scene, margin=0.25)  # |y| = 0.3 > 0.5 - 0.25 = 0.25: off
    assert strict.evaluate(trajectories[2:], controls[2:])[0] == 1.0


def test_off_table_ignores_the_initial_state() -> None:
    scene = tiny_scene()
    trajectories, controls = static_batch(scene, initial_state(scene))
    trajectories[0, 0, scene.layout.object_pose(0).start] = 0.5
    assert OffTable.from_scene(scene).evaluate(trajectories, controls)[0] == 0.0


# -- non-target objects -----------------------------------------------------------------
def test_non_target_objects_displacement_and_goal_entry() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05, others=((0.0, 0.2), (0.1, -0.2)))
    trajectories, controls = static_batch(scene, initial_state(scene), samples=3)
    layout = scene.layout
    first, second = layout.object_pose(1).start, layout.object_pose(2).start
    trajectories[0, -1, first : first + 2] = (0.03, 0.24)  # moved by (0.03, 0.04): 0.05 m
    trajectories[1, 2, second : second + 2] = (0.16, 0.06)  # inside the goal at one state
    trajectories[1, 3:, second : second + 2] = (0.1, -0.17)  # then out again, 0.03 m from start
    set_target(scene, trajectories[2:], (0.5, 0.5))  # the target's own motion is free
    term = NonTargetObjects.from_scene(scene, goal_entry_cost=2.0)
    np.testing.assert_allclose(term.evaluate(trajectories, controls), [0.05**2, 2.0 + 0.03**2, 0.0])


def test_non_target_objects_goal_entry_margin_charges_entering_the_band_and_the_goal() -> None:
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05, others=((0.0, 0.2),))
    trajectories, controls = static_batch(scene, initial_state(scene), samples=5)
    start = scene.layout.object_pose(1).start
    band, inside = (0.15, 0.05 + 0.065), (0.15, 0.05 + 0.04)  # 15 mm outside the goal; inside it
    trajectories[0, 2, start : start + 2] = band  # from outside into the band
    trajectories[1, 2, start : start + 2] = inside  # from outside into the goal (through the band)
    trajectories[2, :, start : start + 2] = band  # stays in the band it started in
    trajectories[3, :2, start : start + 2] = band  # from the band ...
    trajectories[3, 2:, start : start + 2] = inside  # ... into the goal
    # sample 4 stays where it started, far from the goal
    displaced = 0.025**2  # sample 3 ends 25 mm from where it started; the others where they started
    np.testing.assert_allclose(
        NonTargetObjects.from_scene(scene).evaluate(trajectories, controls), [0.0, 1.0, 0.0, 1.0 + displaced, 0.0]
    )
    np.testing.assert_allclose(
        NonTargetObjects.from_scene(scene, goal_entry_margin=0.02).evaluate(trajectories, controls),
        [1.0, 2.0, 0.0, 1.0 + displaced, 0.0],
    )


def test_non_target_objects_band_approach_cost_charges_coming_closer_from_inside_the_band() -> None:
    # the other object starts 15 mm outside the goal: in the 20 mm band
    scene = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05, others=((0.15, 0.115),))
    trajectories, controls = static_batch(scene, initial_state(scene), samples=4)
    start = scene.layout.object_pose(1).start
    trajectories[0, 2, start : start + 2] = (0.15, 0.105)  # 10 mm closer at one state: half the band
    trajectories[0, 3:, start : start + 2] = (0.15, 0.115)  # and back where it started
    trajectories[1, 1:, start : start + 2] = (0.15, 0.125)  # pushed away from the goal: free
    trajectories[2, 1:, start : start + 2] = (0.15, 0.09)  # into the goal: the entry charge too
    # sample 3 stays where it started (a target passing it pays nothing)
    plain = NonTargetObjects.from_scene(scene, goal_entry_margin=0.02)
    graded = NonTargetObjects.from_scene(scene, goal_entry_margin=0.02, band_approach_cost=2.0)
    away, into = 0.01**2, 0.025**2  # the displacements of samples 1 and 2
    np.testing.assert_allclose(plain.evaluate(trajectories, controls), [0.0, away, 1.0 + into, 0.0])
    np.testing.assert_allclose(graded.evaluate(trajectories, controls),
                               [2.0 * 0.5, away, 1.0 + into + 2.0 * 0.025 / 0.02, 0.0])
    # an object that starts outside the band pays the band's entry charge, not the approach
    outside = tiny_scene(goal=(0.15, 0.05), goal_radius=0.05, others=((0.15, 0.2),))
    trajectories, controls = static_batch(outside, initial_state(outside), samples=1)
    start = outside.layout.object_pose(1).start
    trajectories[0, 1:, start : start + 2] = (0.15, 0.105)
    np.testing.assert_allclose(
        NonTargetObjects.from_scene(outside, goal_entry_margin=0.02, band_approach_cost=2.0).evaluate(
            trajectories, controls), [1.0 + 0.095**2])
    with pytest.raises(CostConfigError, match="non_target_objects.band_approach_cost: .*goal_entry_margin is 0"):
        NonTargetObjects.from_scene(scene, band_approach_cost=1.0)


def test_non_target_objects_single_object_is_zero() -> None:
    scene = tiny_scene()
    trajectories, controls = static_batch(scene, initial_state(scene))
    assert NonTargetObjects.from_scene(scene).evaluate(trajectories, controls)[0] == 0.0


# -- the sum and its configuration ------------------------------------------------------
def test_cost_function_sums_weighted_terms() -> None:
    scene = tiny_scene(goal=(0.15, 0.05))
    trajectories, _ = static_batch(scene, initial_state(scene))
    set_target(scene, trajectories, (0.25, 0.05), steps=-1)
    controls = np.array([[[0.1, 0.0], [0.1, 0.0], [0.0, 0.1], [0.0, 0.0]]])
    cost = CostFunction.from_config(
        scene, {"goal_distance": {"weight": 100.0}, "smoothness": {"weight": 10.0}}
    ).with_previous_control(np.zeros(2))
    breakdown = cost.breakdown(trajectories, controls)
    assert breakdown["goal_distance"][0] == pytest.approx(100.0 * 0.01)
    assert breakdown["smoothness"][0] == pytest.approx(10.0 * 0.04)
    assert cost.evaluate(trajectories, controls)[0] == pytest.approx(1.0 + 0.4)
    assert cost.names == ("goal_distance", "smoothness")


def test_cost_config_errors_name_the_offending_entries() -> None:
    scene = tiny_scene()
    with pytest.raises(CostConfigError, match=r"unknown cost term\(s\) \['goal', 'speed'\]"):
        CostFunction.from_config(scene, {"goal": {"weight": 1.0}, "speed": {}, "smoothness": {}})
    with pytest.raises(CostConfigError, match=r"costs.smoothness: unknown parameter\(s\) \['gain'\]"):
        CostFunction.from_config(scene, {"smoothness": {"gain": 1.0}})
    with pytest.raises(CostConfigError, match=r"costs.goal_distance.weight: must be >= 0"):
        CostFunction.from_config(scene, {"goal_distance": {"weight": -1.0}})
    with pytest.raises(CostConfigError, match=r"costs.obstacle_proximity.min_clearance: must be > 0"):
        CostFunction.from_config(scene, {"obstacle_proximity": {"min_clearance": 0.0}})
    with pytest.raises(CostConfigError, match=r"costs.off_table.weight: expected a number"):
        CostFunction.from_config(scene, {"off_table": {"weight": "high"}})
    with pytest.raises(CostConfigError, match="at least one cost term"):
        CostFunction.from_config(scene, {})


def test_cost_function_refuses_two_terms_of_one_name() -> None:
    smoothness = Smoothness(layout=tiny_scene().layout)
    with pytest.raises(CostConfigError, match=r"terms: duplicate term\(s\) \['smoothness'\]"):
        CostFunction((smoothness, smoothness))


def test_every_term_declares_the_parameters_from_scene_accepts() -> None:
    import inspect

    from parapush.planning.costs import TERM_TYPES

    for name, term_type in TERM_TYPES.items():
        accepted = [
            parameter.name
            for parameter in inspect.signature(term_type.from_scene).parameters.values()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        assert sorted(accepted) == sorted(term_type.PARAMETERS), name


def test_terms_reject_mismatched_shapes() -> None:
    scene = tiny_scene()
    trajectories, controls = static_batch(scene, initial_state(scene), samples=2)
    with pytest.raises(ValueError, match=r"controls: expected shape \(2, 4, 2\)"):
        Smoothness.from_scene(scene).evaluate(trajectories, controls[:, :3])
    with pytest.raises(ValueError, match="trajectories: expected shape"):
        GoalDistance.from_scene(scene).evaluate(trajectories[..., :-1], controls)


def test_obstacle_proximity_influence_distance_cuts_off_far_obstacles() -> None:
    scene = obstacle_scene()
    state = initial_state(scene)
    state[0:2] = (0.0, 0.0375 + 0.0145 + 0.05)  # pusher 0.05 m from the surface
    set_target(scene, state[None, None], (0.0, -(0.0375 + 0.0512 + 0.2)))  # target 0.2 m away
    trajectories, controls = static_batch(scene, state)
    term = ObstacleProximity.from_scene(scene, influence_distance=0.1)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(HORIZON * (1 / 0.05**2 - 1 / 0.1**2))
    with pytest.raises(CostConfigError, match="influence_distance: must be > min_clearance"):
        ObstacleProximity.from_scene(scene, influence_distance=0.001)


def test_pusher_target_distance_is_zero_in_contact_and_squared_gap_otherwise() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0))
    state = initial_state(scene)
    trajectories, controls = static_batch(scene, state)
    contact = 0.0512 + 0.0145
    trajectories[0, :, 0:2] = [
        [-contact, 0.0],
        [-contact, 0.0],
        [0.0, contact + 0.01],
        [0.03 + contact, 0.0],
        [0.0, -contact],
    ]
    term = PusherTargetDistance.from_scene(scene)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.01**2 + 0.03**2)
    trajectories[0, 1:, 0:2] = [-contact, 0.0]
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.0, abs=1e-20)


def test_pusher_goal_side_charges_only_a_pusher_ahead_of_the_target_towards_the_goal() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.3, 0.0))  # the goal along +x
    trajectories, controls = static_batch(scene, initial_state(scene))
    trajectories[0, :, 0:2] = [
        [-0.07, 0.0],  # x_0 is not charged
        [-0.07, 0.0],  # behind the target: 0
        [0.0, 0.07],  # beside it: 0
        [0.05, 0.07],  # 5 cm ahead, beside: 0.05^2
        [0.02, 0.0],  # 2 cm ahead: 0.02^2
    ]
    term = PusherGoalSide.from_scene(scene, weight=2.0)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.05**2 + 0.02**2)
    set_target(scene, trajectories, (0.3, 0.0))  # at the goal centre the side is undefined: 0
    trajectories[0, :, 0:2] = [0.35, 0.0]
    assert term.evaluate(trajectories, controls)[0] == 0.0
    with pytest.raises(CostConfigError, match="pusher_goal_side.weight"):
        PusherGoalSide.from_scene(scene, weight=-1.0)


def test_pusher_goal_side_behind_margin_charges_a_pusher_beside_the_target() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.3, 0.0))  # the goal along +x
    trajectories, controls = static_batch(scene, initial_state(scene))
    trajectories[0, :, 0:2] = [
        [0.0, 0.07],  # x_0 is not charged
        [-0.07, 0.0],  # 7 cm behind the centre: 0
        [0.0, 0.07],  # beside it: the margin, 0.02^2
        [-0.01, 0.07],  # 1 cm behind, beside: 0.01^2
        [0.02, 0.0],  # 2 cm ahead: (0.02 + 0.02)^2
    ]
    term = PusherGoalSide.from_scene(scene, behind_margin=0.02)
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(0.02**2 + 0.01**2 + 0.04**2)
    set_target(scene, trajectories, (0.3, 0.0))  # at the goal centre the side is undefined: 0
    assert term.evaluate(trajectories, controls)[0] == 0.0
    with pytest.raises(CostConfigError, match="pusher_goal_side.behind_margin"):
        PusherGoalSide.from_scene(scene, behind_margin=-0.01)
