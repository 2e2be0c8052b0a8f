"""Planar clearances and the task's termination checks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_planning_fixtures import initial_state, tiny_scene

from parapush.physics.planar_geometry import (
    disc_obstacle_clearance,
    object_obstacle_clearance,
    segment_box_distance,
    segment_obstacle_clearance,
)
from parapush.planning import MpcOutcome, TerminationCheck
from parapush.scene import ObjectSpec, Obstacle

POST = Obstacle(name="post", radius=0.0375, pose=(0.0, 0.0, 0.0))
CRATE = Obstacle(name="crate", shape="box", half_extents=(0.1, 0.05), pose=(0.0, 0.0, 0.0))


def test_disc_and_segment_clearances_to_a_cylinder() -> None:
    assert disc_obstacle_clearance(np.array([0.2, 0.0]), 0.05, POST) == pytest.approx(0.2 - 0.0375 - 0.05)
    starts = np.array([[-0.2, 0.1], [-0.2, 0.0]])
    ends = np.array([[0.2, 0.1], [-0.1, 0.0]])
    np.testing.assert_allclose(
        segment_obstacle_clearance(starts, ends, 0.01, POST), [0.1 - 0.0475, 0.1 - 0.0475]
    )


def test_segment_box_distance_crossing_corner_and_parallel() -> None:
    half, pose = (0.1, 0.05), (0.0, 0.0, 0.0)
    starts = np.array([[-0.3, 0.0], [0.2, 0.15], [-0.3, 0.08], [0.0, 0.0]])
    ends = np.array([[0.3, 0.0], [0.3, 0.25], [0.3, 0.08], [0.0, 0.0]])
    distances = segment_box_distance(starts, ends, half, pose)
    np.testing.assert_allclose(distances, [0.0, np.hypot(0.1, 0.1), 0.03, 0.0], atol=1e-12)
    rotated = segment_box_distance(np.array([0.0, 0.2]), np.array([0.0, 0.2]), half, (0.0, 0.0, np.pi / 2))
    assert float(rotated) == pytest.approx(0.1)


def test_object_obstacle_clearance_for_every_shape_pair() -> None:
    cylinder = ObjectSpec(name="c", radius=0.05)
    box = ObjectSpec(name="b", shape="box", half_extents=(0.05, 0.02))
    assert object_obstacle_clearance(cylinder, np.array([0.0, 0.2, 0.0]), CRATE) == pytest.approx(0.1)
    # box object 0.1 m right of the post, long side along y after a quarter turn
    assert object_obstacle_clearance(box, np.array([0.1, 0.0, np.pi / 2]), POST) == pytest.approx(
        0.1 - 0.02 - 0.0375
    )
    assert object_obstacle_clearance(box, np.array([0.0, 0.1, 0.0]), CRATE) == pytest.approx(
        0.1 - 0.05 - 0.02
    )
    assert object_obstacle_clearance(box, np.array([0.12, 0.0, 0.3]), CRATE) == 0.0  # overlapping
    # corner to corner: yawed so that its corner (hx, -hy) points along -x, 0.03 m from the
    # crate's corner (0.1, 0.05); its edges run away from the crate
    diagonal = np.hypot(0.05, 0.02)
    pose = np.array([0.1 + 0.03 + diagonal, 0.05, np.arctan2(0.02, 0.05) + np.pi])
    clearance = object_obstacle_clearance(box, pose, CRATE)
    assert clearance == pytest.approx(0.03, abs=1e-9)


def isrr_like_scene(**changes):
    scene = tiny_scene(obstacles=(POST,), goal=(0.2, 0.0), goal_radius=0.05, others=((0.0, 0.3),))
    return replace(scene, **changes) if changes else scene


def state_with(scene, *, pusher=None, target=None, other=None):
    state = initial_state(scene)
    layout = scene.layout
    if pusher is not None:
        state[layout.pusher_position] = pusher
    if target is not None:
        state[layout.object_pose(0).start : layout.object_pose(0).start + 2] = target
    if other is not None:
        state[layout.object_pose(1).start : layout.object_pose(1).start + 2] = other
    return state


def test_termination_outcomes() -> None:
    scene = isrr_like_scene()
    check = TerminationCheck(scene=scene)
    going_on = check.check(state_with(scene))
    assert going_on.outcome is None and not going_on.finished
    assert going_on.distance_to_goal == pytest.approx(0.35)

    touching = 0.0375 + 0.0512
    hit = check.check(state_with(scene, target=(-touching + 1e-6, 0.0)))
    assert hit.outcome is MpcOutcome.OBSTACLE_HIT and "target 'target' hit obstacle 'post'" in hit.reason
    assert check.check(state_with(scene, target=(-touching - 1e-3, 0.0))).outcome is None
    tolerant = TerminationCheck(scene=scene, obstacle_tolerance=0.002)
    assert (
        tolerant.check(state_with(scene, target=(-touching - 1e-3, 0.0))).outcome is MpcOutcome.OBSTACLE_HIT
    )

    pusher_hit = check.check(state_with(scene, pusher=(0.0, 0.05)))
    assert pusher_hit.outcome is MpcOutcome.OBSTACLE_HIT and pusher_hit.reason.startswith("pusher hit")

    off = check.check(state_with(scene, other=(0.0, 0.51)))
    assert off.outcome is MpcOutcome.OBJECT_OFF_TABLE and "'other_0'" in off.reason
    assert check.check(state_with(scene, target=(-0.41, 0.0))).outcome is MpcOutcome.OBJECT_OFF_TABLE

    in_goal = check.check(state_with(scene, other=(0.21, 0.01)))
    assert in_goal.outcome is MpcOutcome.OBJECT_IN_GOAL and "'other_0'" in in_goal.reason

    success = check.check(state_with(scene, target=(0.18, 0.03)))
    assert success.outcome is MpcOutcome.SUCCESS and success.reason == ""
    # a failure at the same time wins over success
    both = check.check(state_with(scene, target=(0.2, 0.0), other=(0.2, 0.04)))
    assert both.outcome is MpcOutcome.OBJECT_IN_GOAL


def test_termination_check_validation() -> None:
    with pytest.raises(ValueError, match="has no goal region"):
        TerminationCheck(scene=replace(isrr_like_scene(), goal=None))
    with pytest.raises(ValueError, match="obstacle_tolerance: expected a finite number"):
        TerminationCheck(scene=isrr_like_scene(), obstacle_tolerance=float("nan"))
    check = TerminationCheck(scene=isrr_like_scene())
    with pytest.raises(ValueError, match="state: expected shape"):
        check.check(np.zeros(3))
    bad = state_with(isrr_like_scene())
    bad[0] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        check.check(bad)


def test_outcome_values_match_the_action_constants() -> None:
    assert [outcome.value for outcome in MpcOutcome] == list(range(7))
    assert [outcome.name for outcome in MpcOutcome] == [
        "SUCCESS",
        "OBSTACLE_HIT",
        "OBJECT_OFF_TABLE",
        "OBJECT_IN_GOAL",
        "MAX_CONTROLS",
        "CANCELED",
        "ERROR",
    ]
