"""Scene descriptions, validation errors and the papers' state layout."""

from pathlib import Path

import numpy as np
import pytest

from parapush.scene import SceneError, SceneSnapshot, StateLayout, load_scene, scene_from_dict, wrap_angle
from parapush.scene.uncertainty import ParameterSpread

SCENES = Path(__file__).resolve().parents[2] / "config" / "scenes"


def minimal_scene(**overrides):
    data = {"name": "t", "objects": [{"name": "a", "pose": [0.1, 0.2, 0.3]}]}
    data.update(overrides)
    return data


@pytest.mark.parametrize("path", sorted(SCENES.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_scenes_load_and_place_bodies_on_the_table(path):
    scene = load_scene(path)
    assert scene.target in scene.object_names
    for spec in scene.objects:
        assert scene.table.contains(spec.pose[0], spec.pose[1], margin=spec.bounding_radius), spec.name
    assert scene.table.contains(*scene.pusher.position, margin=scene.pusher.radius)
    if scene.goal is not None:
        assert scene.table.contains(*scene.goal.center, margin=scene.goal.radius)


def test_defaults_are_the_papers_geometry():
    scene = scene_from_dict(minimal_scene())
    assert scene.pusher.radius == pytest.approx(0.0145)
    assert scene.objects[0].radius == pytest.approx(0.0512)
    assert scene.target == "a"


def test_an_object_s_uncertainty_is_a_parameter_spread_whose_omitted_fields_take_the_defaults():
    scene = scene_from_dict(minimal_scene(objects=[{"name": "a", "uncertainty": {"mass": 0.1, "com_offset": 0.005}},
                                                   {"name": "b", "pose": [0.2, 0.0, 0.0]}]))
    assert scene.objects[0].uncertainty == ParameterSpread(mass=0.1, com_offset=0.005)
    assert scene.objects[0].uncertainty.support_friction == ParameterSpread().support_friction
    assert scene.objects[1].uncertainty is None


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (minimal_scene(objects=[{"name": "a", "mass": -1}]), "objects[a].mass"),
        (minimal_scene(objects=[{"name": "a", "shape": "cone"}]), "objects[a].shape"),
        (minimal_scene(objects=[{"name": "a", "pose": [0, 0]}]), "objects[a].pose"),
        (minimal_scene(objects=[{"name": "a", "pose": [0, 0, float("nan")]}]), "objects[a].pose[2]"),
        (minimal_scene(objects=[{"name": "a", "colour": "red"}]), "objects[0]: unknown field"),
        (minimal_scene(objects=[{"mass": 1}]), "objects[0].name"),
        (minimal_scene(objects=[]), "objects"),
        (minimal_scene(objects=[{"name": "a"}, {"name": "a"}]), "duplicate names ['a']"),
        (minimal_scene(table={"length": 0}), "table.length"),
        (minimal_scene(pusher={"radius": "big"}), "pusher.radius"),
        (minimal_scene(goal={"center": [0, 0], "radius": 0}), "goal.radius"),
        (minimal_scene(target="b"), "target"),
        (minimal_scene(obstacles=[{"name": "o", "half_extents": [0.1, -1], "shape": "box"}]),
         "obstacles[o].half_extents[1]"),
        (minimal_scene(objects=[{"name": "a", "uncertainty": {"mass": 1.5}}]), "objects[a].uncertainty.mass"),
        (minimal_scene(objects=[{"name": "a", "uncertainty": {"density": 0.1}}]),
         "objects[a].uncertainty: unknown field"),
        (minimal_scene(objects=[{"name": "a", "uncertainty": 0.3}]), "objects[a].uncertainty: expected a mapping"),
        (minimal_scene(objects=[{"name": "a", "mass": 1.0, "uncertainty": {"com_offset": 0.01},
                                 "patches": [{"center": [0, 0], "half_extents": [0.01, 0.01], "mass": 0.2}]}]),
         "objects[a].uncertainty.com_offset"),
    ],
)
def test_bad_scenes_fail_naming_the_field(data, field):
    with pytest.raises(SceneError, match=field.replace("[", r"\[").replace("]", r"\]")):
        scene_from_dict(data)


def test_bad_files_name_the_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nobjects: [ {name: a, mass: 0} ]\n")
    with pytest.raises(SceneError, match=r"broken.yaml: objects\[a\].mass"):
        load_scene(broken)
    with pytest.raises(SceneError, match="cannot read"):
        load_scene(tmp_path / "missing.yaml")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: [unclosed\n")
    with pytest.raises(SceneError, match="invalid YAML"):
        load_scene(bad_yaml)


def test_state_layout_indices_follow_the_papers_order():
    layout = StateLayout(2)
    assert layout.dimension == 16
    state = np.arange(16.0)
    assert list(state[layout.pusher_position]) == [0, 1]
    assert list(state[layout.object_pose(0)]) == [2, 3, 4]
    assert list(state[layout.object_pose(1)]) == [5, 6, 7]
    assert list(state[layout.pusher_velocity]) == [8, 9]
    assert list(state[layout.object_twist(0)]) == [10, 11, 12]
    assert list(state[layout.object_twist(1)]) == [13, 14, 15]
    assert list(layout.yaw_indices) == [4, 7]
    np.testing.assert_array_equal(layout.poses(state), [[2, 3, 4], [5, 6, 7]])
    np.testing.assert_array_equal(layout.twists(state[None])[0], [[10, 11, 12], [13, 14, 15]])


def test_compose_round_trips_and_checks_shapes():
    layout = StateLayout(2)
    poses = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    state = layout.compose([1.0, 2.0], poses, pusher_velocity=[0.01, 0.02])
    np.testing.assert_array_equal(layout.poses(state), poses)
    np.testing.assert_array_equal(state[layout.pusher_velocity], [0.01, 0.02])
    with pytest.raises(ValueError, match="object_poses"):
        layout.compose([0, 0], np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"states: expected shape \(\.\.\., 16\)"):
        layout.check(np.zeros(10))
    with pytest.raises(IndexError):
        layout.object_pose(2)
    with pytest.raises(ValueError, match="object_count"):
        StateLayout(0)


@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_state_layout_from_dimension_is_the_layout_of_that_length(count):
    assert StateLayout.from_dimension(4 + 6 * count) == StateLayout(count)
    assert StateLayout.from_dimension(np.zeros((5, 4 + 6 * count)).shape[-1]).object_count == count
    assert StateLayout.from_dimension(np.int64(4 + 6 * count)).object_count == count
    assert type(StateLayout.from_dimension(np.int64(4 + 6 * count)).object_count) is int


@pytest.mark.parametrize("dimension", [4, 9, 11, 15, 17, 0, -2, 16.0, "16", True, None])
def test_state_layout_from_dimension_refuses_other_lengths(dimension):
    with pytest.raises(ValueError) as error:
        StateLayout.from_dimension(dimension)
    assert str(error.value) == (
        f"dimension: expected a state length 4 + 6 n for n >= 1 objects (10, 16, 22, ...), got {dimension!r}"
    )


def test_wrap_angle():
    np.testing.assert_allclose(wrap_angle(np.array([np.pi, -np.pi, 3 * np.pi / 2, 0.5])),
                               [-np.pi, -np.pi, -np.pi / 2, 0.5])


def test_snapshot_validates_shapes():
    snapshot = SceneSnapshot(1.0, ("a", "b"), np.zeros(16), object_valid=[True, False])
    assert not snapshot.all_valid
    with pytest.raises(ValueError, match="state"):
        SceneSnapshot(1.0, ("a",), np.zeros(16))
    with pytest.raises(ValueError, match="object_valid"):
        SceneSnapshot(1.0, ("a",), np.zeros(10), object_valid=[True, True])
