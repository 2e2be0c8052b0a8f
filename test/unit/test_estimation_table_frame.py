"""Mocap -> table transform: Y-up convention, body poses, offsets, TF helpers, YAML."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from parapush.estimation.table_frame import (
    TableFrameError,
    TableTransform,
    load_table_transform,
    save_table_transform,
    table_transform_from_dict,
    yaw_offset_from_observation,
)

IDENTITY = (0.0, 0.0, 0.0, 1.0)


def about(axis, degrees):
    return tuple(Rotation.from_rotvec(np.radians(degrees) * np.asarray(axis, float)).as_quat())


def test_y_up_preset_maps_motive_axes_to_table_axes():
    transform = TableTransform.y_up()
    # table (x, y, z) = mocap (x, -z, y)
    np.testing.assert_allclose(transform.matrix, [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-15)
    np.testing.assert_allclose(transform.points_to_table([1.0, 2.0, 3.0]), [1.0, -3.0, 2.0], atol=1e-15)


def test_y_up_quarter_turn_about_mocap_up_is_table_yaw_plus_90_degrees():
    # A body on the floor of a Y-up Motive volume, turned 90 deg counter-clockwise seen from
    # above (about mocap +Y), has table yaw +90 deg; its position maps as above.
    pose = TableTransform.y_up().body_pose((0.2, 0.05, -0.1), about((0, 1, 0), 90.0))
    assert pose.yaw == pytest.approx(math.pi / 2, abs=1e-12)
    np.testing.assert_allclose(pose.translation, [0.2, 0.1, 0.05], atol=1e-15)
    np.testing.assert_allclose(pose.planar, [0.2, 0.1, math.pi / 2], atol=1e-12)


def test_quarter_turn_about_z_in_a_z_up_frame():
    pose = TableTransform.z_up((0.1, 0.0, 0.0)).body_pose((0.0, 0.2, 0.0), about((0, 0, 1), 90.0))
    np.testing.assert_allclose(pose.planar, [0.1, 0.2, math.pi / 2], atol=1e-12)


def test_translation_is_the_mocap_origin_in_the_table_frame():
    transform = TableTransform.from_rpy(0.0, 0.0, math.pi / 2, translation=(0.5, -0.25, 0.01))
    # mocap x axis points along table y after a 90 deg yaw
    np.testing.assert_allclose(transform.points_to_table([0.1, 0.0, 0.0]), [0.5, -0.15, 0.01], atol=1e-12)
    origin = transform.mocap_frame_pose()
    np.testing.assert_allclose(origin.translation, [0.5, -0.25, 0.01])
    assert origin.yaw == pytest.approx(math.pi / 2)


def test_yaw_follows_the_table_not_the_mocap_axes():
    # Mocap frame rotated 30 deg about table z: a body at its reference orientation has
    # turned by nothing, so its yaw is the yaw offset; turning it by 20 deg about the (shared)
    # vertical adds 20 deg.
    transform = TableTransform.from_rpy(0.0, 0.0, math.radians(30.0))
    assert transform.body_pose((0, 0, 0), IDENTITY).yaw == pytest.approx(0.0, abs=1e-12)
    assert transform.body_pose((0, 0, 0), IDENTITY, yaw_offset=0.4).yaw == pytest.approx(0.4)
    turned = transform.body_pose((0, 0, 0), about((0, 0, 1), 20.0), yaw_offset=0.4)
    assert turned.yaw == pytest.approx(0.4 + math.radians(20.0))


def test_centre_offset_is_in_the_object_frame():
    # Object at yaw 90 deg, centre 0.1 m ahead of the pivot along its own x: +0.1 in table y.
    pose = TableTransform.z_up().body_pose((0.0, 0.0, 0.05), about((0, 0, 1), 90.0), (0.1, 0.0, -0.02))
    np.testing.assert_allclose(pose.translation, [0.0, 0.1, 0.03], atol=1e-12)


def test_tilted_body_with_markers_above_its_centre_shifts_by_the_lever_arm():
    # Pivot 20 mm above the centre, body tilted 5 deg about table x: the centre lies
    # 20 mm * sin(5 deg) = 1.743 mm to +y of the pivot's projection; yaw is unaffected.
    transform = TableTransform.y_up()
    tilt_in_mocap = about((1, 0, 0), 5.0)  # mocap x = table x
    pose = transform.body_pose((0.0, 0.0, 0.0), tilt_in_mocap, (0.0, 0.0, -0.02))
    assert pose.translation[1] == pytest.approx(0.02 * math.sin(math.radians(5.0)), abs=1e-12)
    assert pose.translation[1] == pytest.approx(1.743e-3, abs=1e-6)
    assert pose.yaw == pytest.approx(0.0, abs=1e-12)


@given(st.floats(-math.pi, math.pi), st.floats(-180.0, 180.0), st.floats(-10.0, 10.0))
def test_yaw_offset_from_observation_reproduces_the_known_yaw(known_yaw, turn_degrees, tilt_degrees):
    transform = TableTransform.y_up((0.1, 0.2, 0.0))
    orientation = (
        Rotation.from_quat(about((1, 0, 0), tilt_degrees))
        * Rotation.from_quat(about((0, 1, 0), turn_degrees))
    ).as_quat()
    offset = yaw_offset_from_observation(transform, orientation, known_yaw)
    yaw = transform.body_pose((0, 0, 0), orientation, yaw_offset=offset).yaw
    assert math.cos(yaw - known_yaw) == pytest.approx(1.0, abs=1e-12)
    assert math.sin(yaw - known_yaw) == pytest.approx(0.0, abs=1e-9)


def test_inverse_undoes_the_transform():
    transform = TableTransform(about((1, 2, 3), 40.0), (0.3, -0.2, 0.1))
    points = np.array([[0.1, 0.2, 0.3], [-1.0, 0.5, 2.0]])
    np.testing.assert_allclose(transform.inverse().points_to_table(transform.points_to_table(points)), points)


def test_body_pose_rejects_a_non_rotation():
    with pytest.raises(ValueError, match="orientation"):
        TableTransform.y_up().body_pose((0, 0, 0), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="position"):
        TableTransform.y_up().body_pose((0, math.nan, 0), IDENTITY)


def test_construction_errors_name_the_field():
    with pytest.raises(TableFrameError, match="rotation"):
        TableTransform((0.0, 0.0, 0.0, 2.0))
    with pytest.raises(TableFrameError, match="translation"):
        TableTransform(IDENTITY, (0.0, 0.0))
    with pytest.raises(TableFrameError, match="proper rotation"):
        TableTransform.from_matrix(np.diag([1.0, 1.0, -1.0]))


def test_transform_file_round_trip(tmp_path):
    transform = TableTransform(about((0.3, 1, 0.1), 97.0), (0.41, -0.07, 0.012))
    path = tmp_path / "mocap_table.yaml"
    save_table_transform(path, transform, {"rms_residual": 0.0004}, header="test header")
    text = path.read_text()
    assert text.startswith("# test header\n")
    loaded = load_table_transform(path)
    np.testing.assert_allclose(loaded.rotation, transform.rotation, atol=1e-12)
    np.testing.assert_allclose(loaded.translation, transform.translation, atol=1e-12)


@pytest.mark.parametrize(
    "rotation",
    [{"preset": "y_up"}, {"rpy_degrees": [90.0, 0.0, 0.0]}, {"rpy": [math.pi / 2, 0.0, 0.0]}],
)
def test_rotation_spellings_agree(rotation):
    transform = table_transform_from_dict({"translation": [0, 0, 0], "rotation": rotation})
    np.testing.assert_allclose(transform.matrix, TableTransform.y_up().matrix, atol=1e-12)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"rotation": {"preset": "y_up"}}, "mocap_to_table.translation: missing"),
        ({"translation": [0, 0, 0]}, "mocap_to_table.rotation: missing"),
        ({"translation": [0, 0], "rotation": {"preset": "y_up"}}, "mocap_to_table.translation"),
        ({"translation": [0, 0, 0], "rotation": {"preset": "x_up"}}, "mocap_to_table.rotation.preset"),
        ({"translation": [0, 0, 0], "rotation": {"quaternion": [0, 0, 0, 3]}}, "rotation.quaternion"),
        ({"translation": [0, 0, 0], "rotation": {"rpy": [0, 0, 0], "preset": "y_up"}}, "exactly one"),
        ({"translation": [0, 0, 0], "rotation": {"euler": [0, 0, 0]}}, "unknown field"),
        ({"translation": [0, 0, 0], "rotation": {"preset": "y_up"}, "scale": 1}, "unknown field"),
    ],
)
def test_transform_dict_errors_name_the_field(data, field):
    with pytest.raises(TableFrameError, match=field):
        table_transform_from_dict(data)


def test_transform_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "absent.yaml"
    with pytest.raises(TableFrameError, match="absent.yaml: cannot read"):
        load_table_transform(missing)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("mocap_to_table: {translation: [0, 0, 0], rotation: {preset: y_up}}\nextra: 1\n")
    with pytest.raises(TableFrameError, match="wrong.yaml: unknown section"):
        load_table_transform(wrong)
    empty = tmp_path / "empty.yaml"
    empty.write_text("calibration: {}\n")
    with pytest.raises(TableFrameError, match="mocap_to_table: missing"):
        load_table_transform(empty)
