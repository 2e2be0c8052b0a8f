"""Table -> base transform, checked against rotations worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parapush.execution.frames import RigidTransform


def test_planar_quarter_turn_hand_checked():
    # Table rotated +90 deg about base z: table x points along base y, table y along base -x.
    transform = RigidTransform.planar(yaw_rad=math.pi / 2, x_m=0.5, y_m=-0.2, z_m=0.1)
    np.testing.assert_allclose(transform.rotate([1.0, 0.0, 0.0]), [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(transform.rotate([0.0, 1.0, 0.0]), [-1.0, 0.0, 0.0], atol=1e-15)
    # A point 0.1 m along table x sits 0.1 m along base y from the table origin (0.5, -0.2, 0.1).
    np.testing.assert_allclose(transform.apply([0.1, 0.0, 0.0]), [0.5, -0.1, 0.1], atol=1e-15)


def test_planar_thirty_degrees_hand_checked():
    transform = RigidTransform.planar(yaw_rad=math.radians(30))
    # (0.1, 0.0) m/s -> (0.1 cos 30, 0.1 sin 30) = (0.0866..., 0.05)
    np.testing.assert_allclose(transform.rotate([0.1, 0.0, 0.0]), [0.1 * math.sqrt(3) / 2, 0.05, 0.0])
    np.testing.assert_allclose(transform.rotate([0.0, 0.2, 0.0]), [-0.1, 0.2 * math.sqrt(3) / 2, 0.0])


def test_quaternion_half_turn_about_x_flips_y():
    # Table mounted upside down (180 deg about x): (vx, vy, 0) -> (vx, -vy, 0).
    transform = RigidTransform.from_quaternion(quaternion_xyzw=[1.0, 0.0, 0.0, 0.0], translation=[0, 0, 0])
    np.testing.assert_allclose(transform.rotate([0.3, 0.4, 0.0]), [0.3, -0.4, 0.0], atol=1e-15)


def test_quaternion_matches_planar_yaw():
    yaw = 0.7
    planar = RigidTransform.planar(yaw_rad=yaw, x_m=1.0)
    quaternion = RigidTransform.from_quaternion(
        quaternion_xyzw=[0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)], translation=[1.0, 0.0, 0.0]
    )
    np.testing.assert_allclose(quaternion.rotation, planar.rotation, atol=1e-15)
    np.testing.assert_allclose(quaternion.translation, planar.translation)


def test_from_parameters_accepts_planar_and_full_forms():
    planar = RigidTransform.from_parameters([0.1, 0.2, 0.3, math.pi])
    np.testing.assert_allclose(planar.rotate([1.0, 0.0, 0.0]), [-1.0, 0.0, 0.0], atol=1e-15)
    full = RigidTransform.from_parameters([0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 2.0])  # normalised
    np.testing.assert_allclose(full.rotation, np.eye(3))
    with pytest.raises(ValueError, match="table_to_base"):
        RigidTransform.from_parameters([1.0, 2.0])


def test_inverse_round_trip():
    transform = RigidTransform.planar(yaw_rad=-1.2, x_m=0.4, y_m=0.3, z_m=-0.05)
    points = np.random.default_rng(3).normal(size=(5, 3))
    np.testing.assert_allclose(transform.inverse().apply(transform.apply(points)), points, atol=1e-12)


def test_rotations_preserve_norms():
    transform = RigidTransform.from_quaternion(quaternion_xyzw=[0.1, -0.3, 0.2, 0.9], translation=[0, 0, 0])
    vectors = np.random.default_rng(4).normal(size=(20, 3))
    np.testing.assert_allclose(
        np.linalg.norm(transform.rotate(vectors), axis=1), np.linalg.norm(vectors, axis=1)
    )


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rotation": np.diag([1.0, 1.0, 2.0])}, "orthonormal"),
        ({"rotation": np.diag([1.0, 1.0, -1.0])}, "reflection"),
        ({"rotation": np.eye(2)}, "rotation"),
        ({"translation": [0.0, float("nan"), 0.0]}, "translation"),
    ],
)
def test_invalid_transforms_are_rejected(kwargs, words):
    with pytest.raises(ValueError, match=words):
        RigidTransform(**kwargs)


def test_zero_quaternion_is_rejected():
    with pytest.raises(ValueError, match="quaternion_xyzw"):
        RigidTransform.from_quaternion(quaternion_xyzw=[0, 0, 0, 0], translation=[0, 0, 0])


def test_arrays_are_read_only():
    transform = RigidTransform.planar(yaw_rad=0.1)
    with pytest.raises(ValueError):
        transform.rotation[0, 0] = 2.0
