"""The target's route round static obstacles (parapush.planning.goal_route) and the cost terms
and proposals that use it; the box-shaped target's exact obstacle clearance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_planning_fixtures import initial_state, tiny_scene

from parapush.physics.planar_geometry import object_obstacle_clearance, swept_outline_obstacle_clearance
from parapush.planning.costs import CostConfigError, CostFunction, GoalDistance, ObstacleProximity, PusherGoalSide
from parapush.planning.goal_route import GoalRoute
from parapush.planning.initial_guess import straight_line_path
from parapush.scene import ObjectSpec, Obstacle

POST = Obstacle(name="post", radius=0.0375, pose=(0.0, 0.0, 0.0))


def blocked_scene():
    """Target at (-0.15, 0), goal at (0.15, 0), a post in between at the origin."""
    return tiny_scene(goal=(0.15, 0.0), obstacles=(POST,))


def test_without_obstacles_there_is_no_route() -> None:
    assert GoalRoute.for_scene(tiny_scene(), 0.005) is None
    assert GoalDistance.from_scene(tiny_scene(), route_margin=0.005).route is None


def test_where_the_goal_is_in_sight_the_route_is_the_straight_line_exactly() -> None:
    route = GoalRoute.for_scene(blocked_scene(), 0.005)
    points = np.array([[0.15, 0.2], [0.3, -0.1], [0.1, 0.0], [-0.05, 0.3]])
    assert route.sees_goal(points).all()
    np.testing.assert_array_equal(route.distance(points), np.linalg.norm(points - route.goal, axis=1))
    towards = (route.goal - points) / np.linalg.norm(route.goal - points, axis=1, keepdims=True)
    np.testing.assert_allclose(route.direction(points), towards, atol=1e-12)


def test_behind_the_obstacle_the_route_goes_round_it() -> None:
    route = GoalRoute.for_scene(blocked_scene(), 0.005)
    target = np.array([-0.15, 0.0])
    assert not route.sees_goal(target)
    # the shortest way of a disc of radius r = 0.0512 + 0.005 round the post: the two tangents and the arc
    clearance = 0.0375 + 0.0512 + 0.005
    tangent = np.sqrt(0.15**2 - clearance**2)
    arc = clearance * (np.pi - 2 * np.arccos(clearance / 0.15))
    exact = 2 * tangent + arc
    assert exact > 0.3 and exact <= route.distance(target) <= 1.02 * exact  # the grid: 1.1 % long here
    direction = route.direction(target)
    assert abs(direction[1]) > 0.4 and direction[0] > 0.5  # forwards and round one side
    # pushing the target sideways (round the post) shortens its route; the straight line barely changes
    sideways = target + [0.0, 0.05 * np.sign(direction[1])]
    assert route.distance(sideways) < route.distance(target) - 0.01


def test_a_box_target_routes_as_the_disc_it_sweeps_when_it_turns() -> None:
    cylinder = GoalRoute.for_scene(blocked_scene(), 0.005)
    assert cylinder.radius == pytest.approx(0.0512 + 0.005, abs=1e-12)  # a disc: its radius
    box_scene = dataclasses.replace(blocked_scene(), objects=(BOX,))
    box = GoalRoute.for_scene(box_scene, 0.005)
    assert box.radius == pytest.approx(np.hypot(0.0545, 0.077) + 0.005, abs=1e-12)  # its half-diagonal
    # a box 0.13 m from the post (its half width and the post's radius 0.092 m) is inside that disc's
    # margin: its route first leads away from the post, where the old inscribed disc (0.0545 m)
    # let its straight push graze the post
    near = np.array([-0.13, 0.0])
    assert box.distance(near) > box.distance(np.array([-0.18, 0.0]))  # inscribed: 0.357 against 0.396 m
    assert box.direction(near)[0] < 0.0  # inscribed: 0.56, forwards


def test_a_point_inside_the_obstacle_margin_still_has_a_finite_larger_distance() -> None:
    route = GoalRoute.for_scene(blocked_scene(), 0.005)
    inside, outside = np.array([-0.05, 0.0]), np.array([-0.12, 0.0])
    assert np.isfinite(route.distance(inside)) and route.distance(inside) > route.distance(outside) - 0.07
    assert np.isnan(route.distance(np.array([np.nan, 0.0])))


def test_route_margin_is_validated_and_named() -> None:
    with pytest.raises(CostConfigError, match="goal_distance.route_margin"):
        GoalDistance.from_scene(blocked_scene(), route_margin=-0.01)
    with pytest.raises(CostConfigError, match="pusher_goal_side.route_margin"):
        PusherGoalSide.from_scene(blocked_scene(), route_margin=float("nan"))
    with pytest.raises(ValueError, match="resolution"):
        GoalRoute.for_scene(blocked_scene(), 0.005, resolution=0.0)


def test_goal_distance_uses_the_route_only_where_the_goal_is_hidden() -> None:
    scene = blocked_scene()
    straight = GoalDistance.from_scene(scene, outside_slope=0.5)
    routed = GoalDistance.from_scene(scene, outside_slope=0.5, route_margin=0.005)
    state = initial_state(scene)
    trajectories = np.tile(state, (2, 5, 1))
    pose = scene.layout.object_pose(scene.target_index)
    trajectories[1, -1, pose.start:pose.start + 2] = (0.15, 0.2)  # in sight of the goal
    controls = np.zeros((2, 4, 2))
    plain, route = straight.evaluate(trajectories, controls), routed.evaluate(trajectories, controls)
    assert route[1] == plain[1] and route[0] > plain[0] + 0.05
    cost = CostFunction.from_config(scene, {"goal_distance": {"route_margin": 0.005}})
    assert cost.route is not None and CostFunction.from_config(scene, {"goal_distance": {}}).route is None


def test_pusher_goal_side_measures_ahead_along_the_route() -> None:
    scene = blocked_scene()
    state = initial_state(scene)
    route = GoalRoute.for_scene(scene, 0.005)
    direction = route.direction(np.array([-0.15, 0.0]))
    trajectories = np.tile(state, (1, 5, 1))
    trajectories[0, 1:, 0:2] = np.array([-0.15, 0.0]) + 0.08 * direction  # pusher 8 cm ahead along the route
    controls = np.zeros((1, 4, 2))
    routed = PusherGoalSide.from_scene(scene, route_margin=0.005).evaluate(trajectories, controls)[0]
    straight = PusherGoalSide.from_scene(scene).evaluate(trajectories, controls)[0]
    assert routed == pytest.approx(4 * 0.08**2, rel=1e-9) and straight < routed


def test_the_straight_line_proposal_pushes_along_the_route() -> None:
    scene = blocked_scene()
    state = initial_state(scene)
    route = GoalRoute.for_scene(scene, 0.005)
    plain = straight_line_path(scene, state)
    routed = straight_line_path(scene, state, route=route)
    assert plain[-1][1] == pytest.approx(0.0, abs=1e-12)  # through the post
    push = routed[-1] - routed[-2]
    np.testing.assert_allclose(push / np.linalg.norm(push), route.direction(np.array([-0.15, 0.0])), atol=1e-9)
    # in sight of the goal the route changes nothing
    clear = tiny_scene(goal=(0.15, 0.3), obstacles=(POST,))
    clear_state = initial_state(clear)
    np.testing.assert_array_equal(straight_line_path(clear, clear_state, route=GoalRoute.for_scene(clear, 0.005)),
                                  straight_line_path(clear, clear_state))


# -- a box target's clearance to obstacles --------------------------------------------------------
BOX = ObjectSpec(name="target", shape="box", half_extents=(0.0545, 0.077), pose=(-0.15, 0.0, 0.0))


def test_the_swept_outline_clearance_equals_the_exact_clearance_at_rest() -> None:
    crate = Obstacle(name="crate", shape="box", half_extents=(0.03, 0.05), pose=(0.02, -0.01, 0.4))
    poses = np.column_stack([np.linspace(-0.25, 0.25, 41), np.linspace(0.2, -0.2, 41), np.linspace(-3, 3, 41)])
    for obstacle in (POST, crate):
        swept = swept_outline_obstacle_clearance(poses, poses, BOX.outline, obstacle)
        exact = [object_obstacle_clearance(BOX, pose, obstacle) for pose in poses]
        np.testing.assert_allclose(swept, exact, atol=1e-12)


def test_a_box_moving_past_an_obstacle_is_measured_along_the_move() -> None:
    start, end = np.array([-0.2, 0.0, 0.0]), np.array([0.2, 0.0, 0.0])  # straight through the post
    assert swept_outline_obstacle_clearance(start, end, BOX.outline, POST) < 0.0
    beside = np.array([0.0, 0.2, 0.0])
    assert swept_outline_obstacle_clearance(beside, beside, BOX.outline, POST) == pytest.approx(
        0.2 - 0.077 - 0.0375, abs=1e-12)


def test_obstacle_proximity_charges_a_box_by_its_outline_not_its_bounding_disc() -> None:
    box_scene = dataclasses.replace(blocked_scene(), objects=(dataclasses.replace(BOX, pose=(0.0, 0.125, 0.0)),))
    term = ObstacleProximity.from_scene(box_scene, pusher_gain=0.0, min_clearance=0.002)
    state = initial_state(box_scene)
    state[0:2] = (0.3, 0.3)
    trajectories, controls = np.tile(state, (1, 5, 1)), np.zeros((1, 4, 2))
    gap = 0.125 - 0.077 - 0.0375  # the long side's half width, not the 9.4 cm bounding radius
    assert term.evaluate(trajectories, controls)[0] == pytest.approx(4 / gap**2, rel=1e-9)
