"""Quaternion/matrix/rpy arithmetic (checked against scipy) and the yaw extraction."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from parapush.estimation.rotations import (
    axis_angle_quaternion,
    matrix_to_quaternion,
    matrix_to_rpy,
    quaternion_multiply,
    quaternion_to_matrix,
    rpy_to_matrix,
    unit_quaternion,
    yaw_about_z,
    yaw_quaternion,
)

quaternions = (
    st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4)
    .filter(lambda values: np.linalg.norm(values) > 0.1)
    .map(lambda values: np.asarray(values) / np.linalg.norm(values))
)
angles = st.floats(-math.pi, math.pi)


def same_rotation(first, second, tolerance=1e-9):
    return min(np.linalg.norm(first - second), np.linalg.norm(first + second)) < tolerance


@given(quaternions)
def test_quaternion_to_matrix_matches_scipy(quaternion):
    np.testing.assert_allclose(
        quaternion_to_matrix(quaternion), Rotation.from_quat(quaternion).as_matrix(), atol=1e-12
    )


@given(quaternions)
def test_matrix_to_quaternion_inverts_and_is_canonical(quaternion):
    recovered = matrix_to_quaternion(quaternion_to_matrix(quaternion))
    assert recovered[3] >= 0.0
    assert same_rotation(recovered, quaternion)


def test_matrix_to_quaternion_near_half_turns():
    for axis in np.eye(3):
        quaternion = axis_angle_quaternion(axis, math.pi)
        assert same_rotation(matrix_to_quaternion(quaternion_to_matrix(quaternion)), quaternion)


@given(quaternions, quaternions)
def test_quaternion_multiply_composes_like_scipy(left, right):
    expected = (Rotation.from_quat(left) * Rotation.from_quat(right)).as_quat()
    assert same_rotation(quaternion_multiply(left, right), expected)


@given(angles, st.floats(-1.5, 1.5), angles)
def test_rpy_is_fixed_axis_xyz_and_inverts(roll, pitch, yaw):
    matrix = rpy_to_matrix(roll, pitch, yaw)
    np.testing.assert_allclose(matrix, Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(rpy_to_matrix(*matrix_to_rpy(matrix)), matrix, atol=1e-9)


def test_yaw_of_quarter_turn_about_z_is_hand_checked():
    # 90 deg about z: q = (0, 0, sin 45, cos 45)
    quaternion = np.array([0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)])
    assert yaw_about_z(quaternion) == pytest.approx(math.pi / 2, abs=1e-12)
    assert yaw_about_z(-quaternion) == pytest.approx(math.pi / 2, abs=1e-12)  # same rotation
    assert yaw_about_z(np.array([0.0, 0.0, 0.0, 1.0])) == 0.0
    assert abs(yaw_about_z(np.array([0.0, 0.0, 1.0, 0.0]))) == pytest.approx(math.pi)


@settings(max_examples=200)
@given(angles, st.floats(0.0, 2 * math.pi), st.floats(0.0, 1.2))
def test_yaw_is_exact_under_a_tilt_about_any_horizontal_axis(yaw, axis_heading, tilt):
    twist = yaw_quaternion(yaw)
    swing = axis_angle_quaternion((math.cos(axis_heading), math.sin(axis_heading), 0.0), tilt)
    for orientation in (quaternion_multiply(swing, twist), quaternion_multiply(twist, swing)):
        error = (yaw_about_z(orientation) - yaw + math.pi) % (2 * math.pi) - math.pi
        assert abs(error) < 1e-9


def test_yaw_differs_from_euler_yaw_by_second_order_of_tilt():
    # Rz(0.7) Ry(2 deg) Rx(2 deg): the Z-Y-X Euler yaw is exactly 0.7; the twist differs by
    # about roll * pitch / 2 = 6e-4 rad.
    tilt = math.radians(2.0)
    quaternion = matrix_to_quaternion(rpy_to_matrix(tilt, tilt, 0.7))
    assert yaw_about_z(quaternion) == pytest.approx(0.7, abs=tilt * tilt)
    assert yaw_about_z(quaternion) != pytest.approx(0.7, abs=1e-6)


def test_yaw_of_an_upside_down_body_is_an_error():
    with pytest.raises(ValueError, match="half turn"):
        yaw_about_z(axis_angle_quaternion((1.0, 0.0, 0.0), math.pi))


@pytest.mark.parametrize(
    ("value", "message"),
    [([0, 0, 0, 0], "unit quaternion"), ([0, 0, 1], "4 numbers"), ([0, 0, math.nan, 1], "finite")],
)
def test_unit_quaternion_rejects_non_rotations(value, message):
    with pytest.raises(ValueError, match=message):
        unit_quaternion(value, "orientation")


def test_unit_quaternion_normalises_small_deviations():
    np.testing.assert_allclose(unit_quaternion([0, 0, 0, 1.0004]), [0, 0, 0, 1])
