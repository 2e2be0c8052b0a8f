"""The straight-line initial guess and the warm-start shift."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_planning_fixtures import initial_state, tiny_scene

from parapush.physics.planar_geometry import segment_point_distance
from parapush.planning import shift_controls, straight_line_controls, straight_line_path

CONTACT = 0.0512 + 0.0145  # target radius + pusher radius


def with_pusher(scene, xy):
    state = initial_state(scene)
    state[0:2] = xy
    return state


def test_straight_line_from_behind_pushes_along_the_target_goal_line() -> None:
    scene = tiny_scene(target_position=(-0.15, 0.0), goal=(0.15, 0.0))
    state = with_pusher(scene, (-0.25, 0.0))
    path = straight_line_path(scene, state, approach_clearance=0.01)
    np.testing.assert_allclose(path, [[-0.25, 0.0], [-0.15 - CONTACT - 0.01, 0.0], [0.15 - CONTACT, 0.0]])
    controls = straight_line_controls(scene, state, 4, 1.0, 0.05)
    np.testing.assert_allclose(controls, np.tile([0.05, 0.0], (4, 1)), atol=1e-12)


def test_straight_line_diagonal_goal_direction_and_speed() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.3, 0.4))
    direction = np.array([0.6, 0.8])
    pre_push = -(CONTACT + 0.01) * direction
    state = with_pusher(scene, pre_push)
    controls = straight_line_controls(scene, state, 3, 2.0, 0.08)
    np.testing.assert_allclose(controls, np.tile(0.08 * direction, (3, 1)), atol=1e-12)


def test_approach_goes_around_the_target_when_the_pusher_is_in_front() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.3, 0.0))
    for pusher in ((CONTACT + 0.005, 0.0), (0.02, 0.08), (0.0, -0.09), (-0.03, 0.075)):
        state = with_pusher(scene, pusher)
        path = straight_line_path(scene, state)
        approach = path[:-1]  # up to the pre-push point
        distances = segment_point_distance(approach[:-1], approach[1:], np.zeros(2))
        assert np.all(distances >= CONTACT - 1e-9), (pusher, path)
        np.testing.assert_allclose(path[-2], [-(CONTACT + 0.01), 0.0])
        np.testing.assert_allclose(path[-1], [0.3 - CONTACT, 0.0])
        # detours stay on the pusher's side of the push line
        if abs(pusher[1]) > 0:
            assert np.all(np.sign(path[1:-2, 1]) == np.sign(pusher[1]))


def test_controls_follow_the_path_at_speed_and_stop_at_its_end() -> None:
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.1, 0.0))
    state = with_pusher(scene, (0.02, 0.08))
    path = straight_line_path(scene, state)
    length = np.linalg.norm(np.diff(path, axis=0), axis=1).sum()
    controls = straight_line_controls(scene, state, 20, 1.0, 0.05)
    speeds = np.linalg.norm(controls, axis=1)
    assert np.all(speeds <= 0.05 + 1e-12)
    steps = int(np.ceil(length / 0.05))
    assert np.all(speeds[steps:] == 0.0) and np.all(speeds[: steps - 1] > 0.0)
    np.testing.assert_allclose(path[0] + controls.sum(axis=0), path[-1], atol=1e-12)


def test_straight_line_validation() -> None:
    scene = tiny_scene()
    state = initial_state(scene)
    with pytest.raises(ValueError, match="speed: 0.2 m/s exceeds the pusher's max_speed 0.1"):
        straight_line_controls(scene, state, 4, 1.0, 0.2)
    with pytest.raises(ValueError, match="horizon: expected an integer >= 1"):
        straight_line_controls(scene, state, 0, 1.0, 0.05)
    with pytest.raises(ValueError, match="has no goal region"):
        straight_line_controls(replace(scene, goal=None), state, 4, 1.0, 0.05)
    with pytest.raises(ValueError, match=r"state: expected shape \(10,\)"):
        straight_line_controls(scene, np.zeros((2, 10)), 4, 1.0, 0.05)


def test_target_already_at_the_goal_centre_gives_zero_controls() -> None:
    scene = tiny_scene(target_position=(0.1, 0.0), goal=(0.1, 0.0))
    np.testing.assert_array_equal(straight_line_controls(scene, initial_state(scene), 4, 1.0, 0.05), 0.0)


def test_shift_controls_drops_the_first_and_repeats_or_zeros_the_last() -> None:
    previous = np.array([[1.0, 0.0], [2.0, 0.1], [3.0, 0.2], [4.0, 0.3]]) * 0.01
    np.testing.assert_array_equal(shift_controls(previous), previous[[1, 2, 3, 3]])
    zero = shift_controls(previous, fill="zero")
    np.testing.assert_array_equal(zero[:3], previous[1:])
    np.testing.assert_array_equal(zero[3], [0.0, 0.0])
    np.testing.assert_array_equal(shift_controls(previous[:1]), previous[:1])
    with pytest.raises(ValueError, match=r"previous: expected shape \(N, 2\)"):
        shift_controls(np.zeros(4))
    with pytest.raises(ValueError, match="fill: expected 'repeat' or 'zero'"):
        shift_controls(previous, fill="extend")


@pytest.mark.parametrize("yaw", [0.0, 0.3, np.pi / 2, 2.5])
def test_a_box_target_is_approached_directly_from_behind_and_round_its_back_from_beside(yaw) -> None:
    """The scene format's default box: its pre-push point lies inside its bounding disc for most
    headings, and judged against that disc no approach cleared, so even a pusher right behind it
    went round its front first. Judged against the box itself: straight from behind, round the
    back from beside it, never into it."""
    scene = tiny_scene(target_position=(0.0, 0.0), goal=(0.3, 0.0))
    box = replace(scene.objects[0], shape="box", pose=(0.0, 0.0, yaw))
    scene = replace(scene, objects=(box,))
    outline, pusher_radius = box.outline, scene.pusher.radius
    back = outline.extent_along(np.array([-np.cos(yaw), np.sin(yaw)])) + pusher_radius  # contact distance along -x
    behind = with_pusher(scene, (-back - 0.03, 0.0))
    path = straight_line_path(scene, behind)
    assert len(path) == 3, path  # pusher, pre-push point, push end: no detour
    np.testing.assert_allclose(path[1], [-(back + 0.01), 0.0], atol=1e-12)
    for side in (1.0, -1.0):
        beside = with_pusher(scene, (0.0, side * (box.bounding_radius + pusher_radius + 0.02)))
        path = straight_line_path(scene, beside)
        if yaw in (0.0, np.pi / 2):  # the box's side blocks the straight way: round the back corner only
            assert len(path) == 4, path
            assert path[1][0] < 0.0 and np.sign(path[1][1]) == side
        else:  # a turned box may leave the straight way to the pre-push point free
            assert len(path) in (3, 4), path
        points = np.concatenate([np.linspace(start, end, 200) for start, end in zip(path[:-2], path[1:-1],
                                                                                    strict=True)])
        local = np.stack([np.cos(yaw) * points[:, 0] + np.sin(yaw) * points[:, 1],
                          -np.sin(yaw) * points[:, 0] + np.cos(yaw) * points[:, 1]], axis=1)
        assert np.all(outline.signed_distance(local) >= pusher_radius - 1e-9)
