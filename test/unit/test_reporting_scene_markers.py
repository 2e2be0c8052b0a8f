"""The ROS-free marker descriptions, executed paths and run signals the visualizer publishes."""

from __future__ import annotations

import numpy as np
import pytest

from parapush.reporting.executed_path import ExecutedPath
from parapush.reporting.run_signals import pusher_speed, replan_time
from parapush.reporting.scene_markers import (
    OBJECT_COLOUR,
    OBSTACLE_HEIGHT,
    STALE_COLOUR,
    TARGET_COLOUR,
    MarkerDescription,
    plan_markers,
    scene_markers,
)
from parapush.scene import GoalRegion, ObjectSpec, Obstacle, Scene, SceneSnapshot

SCENE = Scene(
    name="markers",
    objects=(ObjectSpec("puck", pose=(0.0, 0.0, 0.0)),
             ObjectSpec("crate", shape="box", half_extents=(0.03, 0.05), height=0.04, pose=(0.1, 0.2, 0.3))),
    obstacles=(Obstacle("post", pose=(-0.2, 0.1, 0.0)),),
    goal=GoalRegion(center=(0.25, -0.1), radius=0.04),
    target="puck",
)


def random_state(seed: int) -> np.ndarray:
    generator = np.random.default_rng(seed)
    return generator.uniform(-0.3, 0.3, SCENE.layout.dimension)


def by_key(markers):
    return {(marker.namespace, marker.marker_id): marker for marker in markers}


def test_objects_and_pusher_stand_at_the_snapshot_poses():
    state = random_state(1)
    markers = by_key(scene_markers(SCENE, SceneSnapshot(0.0, SCENE.object_names, state)))
    poses = SCENE.layout.poses(state)
    for index, spec in enumerate(SCENE.objects):
        marker = markers[("objects", index)]
        assert marker.position == pytest.approx((poses[index, 0], poses[index, 1], 0.5 * spec.height))
        assert marker.yaw == pytest.approx(poses[index, 2])
    assert markers[("objects", 0)].shape == "cylinder"
    assert markers[("objects", 0)].scale == pytest.approx((0.1024, 0.1024, SCENE.objects[0].height))
    assert markers[("objects", 1)].shape == "cube"
    assert markers[("objects", 1)].scale == pytest.approx((0.06, 0.1, 0.04))
    assert markers[("objects", 0)].colour == TARGET_COLOUR and markers[("objects", 1)].colour == OBJECT_COLOUR
    assert markers[("pusher", 0)].position[:2] == pytest.approx(tuple(state[:2]))
    assert markers[("goal", 0)].position[:2] == pytest.approx(SCENE.goal.center)
    assert markers[("goal", 0)].scale[:2] == pytest.approx((0.08, 0.08))
    assert markers[("obstacles", 0)].position[:2] == pytest.approx((-0.2, 0.1))
    assert markers[("table", 0)].scale[:2] == pytest.approx((SCENE.table.length, SCENE.table.width))
    assert len(markers) == 6  # table, goal, one obstacle, two objects, pusher: ids unique per namespace


def test_stale_bodies_are_greyed():
    snapshot = SceneSnapshot(0.0, SCENE.object_names, random_state(2), pusher_valid=False,
                             object_valid=np.array([True, False]))
    markers = by_key(scene_markers(SCENE, snapshot))
    assert markers[("objects", 0)].colour == TARGET_COLOUR
    assert markers[("objects", 1)].colour == STALE_COLOUR
    assert markers[("pusher", 0)].colour == STALE_COLOUR


def test_a_snapshot_of_other_objects_is_refused():
    snapshot = SceneSnapshot(0.0, ("crate", "puck"), random_state(3))
    with pytest.raises(ValueError, match="snapshot.object_names"):
        scene_markers(SCENE, snapshot)


def test_plan_paths_follow_the_trajectory():
    trajectory = np.stack([random_state(seed) for seed in range(5)])
    target, pusher = plan_markers(SCENE, trajectory)
    assert (target.namespace, target.marker_id, pusher.marker_id) == ("plan", 0, 1)
    assert np.array(target.points)[:, :2] == pytest.approx(SCENE.layout.poses(trajectory)[:, 0, :2])
    assert np.array(pusher.points)[:, :2] == pytest.approx(trajectory[:, :2])
    with pytest.raises(ValueError, match="trajectory"):
        plan_markers(SCENE, trajectory[:1])


@pytest.mark.parametrize(("field", "value", "match"), [
    ("shape", "sphere", "shape"),
    ("scale", (0.0, 1.0, 1.0), "scale"),
    ("colour", (1.0, 0.0, 0.0, 1.5), "colour"),
    ("position", (0.0, float("nan"), 0.0), "position"),
    ("namespace", "", "namespace"),
])
def test_invalid_markers_name_the_field(field, value, match):
    arguments = dict(namespace="n", marker_id=0, shape="cube", position=(0.0, 0.0, 0.0), yaw=0.0,
                     scale=(1.0, 1.0, 1.0), colour=(1.0, 0.0, 0.0, 1.0))
    arguments[field] = value
    with pytest.raises(ValueError, match=match):
        MarkerDescription(**arguments)


def test_a_line_strip_needs_points():
    with pytest.raises(ValueError, match="points"):
        MarkerDescription("n", 0, "line_strip", (0.0, 0.0, 0.0), 0.0, (0.01, 0.0, 0.0), (0, 0, 0, 1),
                          ((0.0, 0.0, 0.0),))


def test_executed_path_keeps_poses_spaced_and_bounded():
    path = ExecutedPath(min_spacing=0.01, max_poses=3)
    kept = [path.add(float(index), 0.004 * index, 0.0) for index in range(12)]
    assert kept == [True, False, False, True, False, False, True, False, False, True, False, False]
    assert [pose[0] for pose in path.poses] == [3.0, 6.0, 9.0]  # the oldest dropped
    assert not path.add(20.0, float("nan"), 0.0)
    with pytest.raises(ValueError, match="max_poses"):
        ExecutedPath(0.01, 1)


def test_run_signals():
    state = SCENE.layout.compose(np.zeros(2), np.zeros((2, 3)), pusher_velocity=np.array([0.03, -0.04]))
    assert pusher_speed(SCENE, state) == pytest.approx(0.05)
    assert replan_time([10.0, 10.5, 11.0], [11.2, 11.7]) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="previous_plan_stamps"):
        replan_time([10.0], [11.0])


def test_ellipses_are_scaled_cylinders_and_polygons_closed_prisms():
    ell = [(0.0, 0.0), (0.08, 0.0), (0.08, 0.03), (0.03, 0.03), (0.03, 0.08), (0.0, 0.08)]
    scene = Scene(
        name="outlines",
        objects=(ObjectSpec("oval", shape="ellipse", half_extents=(0.06, 0.035), height=0.04, pose=(0.0, 0.0, 0.0)),
                 ObjectSpec("ell", shape="polygon", vertices=ell, height=0.05, pose=(0.1, 0.2, 0.0))),
        obstacles=(Obstacle("wedge", shape="polygon", vertices=[(0.0, 0.0), (0.05, 0.0), (0.0, 0.03)],
                            pose=(-0.2, 0.1, 0.5)),),
        target="oval",
    )
    state = random_state(4)[: scene.layout.dimension]
    markers = by_key(scene_markers(scene, SceneSnapshot(0.0, scene.object_names, state)))
    oval, prism = markers[("objects", 0)], markers[("objects", 1)]
    assert oval.shape == "cylinder" and oval.scale == pytest.approx((0.12, 0.07, 0.04))
    pose = scene.layout.poses(state)[1]
    assert prism.shape == "triangle_list" and prism.scale == (1.0, 1.0, 1.0)
    assert prism.position == pytest.approx((pose[0], pose[1], 0.025)) and prism.yaw == pytest.approx(pose[2])
    for marker, body, height in ((prism, scene.objects[1], 0.05),
                                 (markers[("obstacles", 0)], scene.obstacles[0], OBSTACLE_HEIGHT)):
        triangles = np.array(marker.points).reshape(-1, 3, 3)
        # body frame: the outline's vertices, z within +-height/2
        assert np.abs(triangles[..., 2]).max() == pytest.approx(0.5 * height)
        assert {tuple(point) for point in triangles[..., :2].reshape(-1, 2).round(12)} \
            == {tuple(vertex) for vertex in np.round(body.vertices, 12)}
        # closed and facing outwards: the divergence theorem gives its volume, area x height
        volume = np.einsum("ti,ti->t", triangles[:, 0], np.cross(triangles[:, 1], triangles[:, 2])).sum() / 6.0
        assert volume == pytest.approx(body.outline.area * height, rel=1e-12)
    with pytest.raises(ValueError, match="three points per triangle"):
        MarkerDescription("objects", 0, "triangle_list", (0, 0, 0), 0.0, (1, 1, 1), OBJECT_COLOUR,
                          ((0, 0, 0), (1, 0, 0)))
