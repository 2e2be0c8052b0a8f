"""Rotation arithmetic for mocap poses: quaternions, matrices, roll/pitch/yaw, yaw about z.

Conventions (the same as NatNet and ROS):

* Quaternions are ``(qx, qy, qz, qw)``, scalar last, and act on column vectors:
  ``v' = q v q*``. ``q`` and ``-q`` are the same rotation; functions that return a
  quaternion return the one with ``qw >= 0``.
* A rotation matrix ``R`` (3, 3) maps coordinates in the rotated frame to the reference
  frame: ``v_ref = R @ v_body``.
* Roll/pitch/yaw are fixed-axis X-Y-Z angles (ROS ``tf2`` ``setRPY``):
  ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``, radians.
"""

from __future__ import annotations

import math

import numpy as np

#: A quaternion whose norm differs from 1 by more than this is rejected as not a rotation
#: (NatNet sends all-zero quaternions for some untracked bodies).
UNIT_NORM_TOLERANCE = 1e-3


def unit_quaternion(quaternion, name: str = "quaternion") -> np.ndarray:
    """Return ``quaternion`` (4,) ``(qx, qy, qz, qw)`` as a float array of norm 1.

    Raises:
        ValueError: naming ``name`` if it is not 4 finite numbers of norm 1 (within
            :data:`UNIT_NORM_TOLERANCE`; smaller deviations are normalised away).
    """
    values = np.asarray(quaternion, dtype=float)
    if values.shape != (4,):
        raise ValueError(f"{name}: expected 4 numbers (qx, qy, qz, qw), got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: must be finite, got {values.tolist()}")
    norm = float(np.linalg.norm(values))
    if abs(norm - 1.0) > UNIT_NORM_TOLERANCE:
        raise ValueError(f"{name}: expected a unit quaternion, got norm {norm:.6g} ({values.tolist()})")
    return values / norm


def quaternion_multiply(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Hamilton product ``left * right`` of two quaternions (4,): apply ``right`` first."""
    lx, ly, lz, lw = np.asarray(left, dtype=float)
    rx, ry, rz, rw = np.asarray(right, dtype=float)
    return np.array(
        [
            lw * rx + lx * rw + ly * rz - lz * ry,
            lw * ry - lx * rz + ly * rw + lz * rx,
            lw * rz + lx * ry - ly * rx + lz * rw,
            lw * rw - lx * rx - ly * ry - lz * rz,
        ]
    )


def quaternion_conjugate(quaternion: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion), (4,)."""
    qx, qy, qz, qw = np.asarray(quaternion, dtype=float)
    return np.array([-qx, -qy, -qz, qw])


def canonical_quaternion(quaternion: np.ndarray) -> np.ndarray:
    """The representative of ``quaternion`` (4,) with ``qw >= 0``."""
    values = np.asarray(quaternion, dtype=float)
    return -values if values[3] < 0.0 else values.copy()


def quaternion_to_matrix(quaternion: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of a unit quaternion (4,) ``(qx, qy, qz, qw)``."""
    qx, qy, qz, qw = np.asarray(quaternion, dtype=float)
    return np.array(
        [
            [1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qz * qw), 2.0 * (qx * qz + qy * qw)],
            [2.0 * (qx * qy + qz * qw), 1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qx * qw)],
            [2.0 * (qx * qz - qy * qw), 2.0 * (qy * qz + qx * qw), 1.0 - 2.0 * (qx * qx + qy * qy)],
        ]
    )


def matrix_to_quaternion(matrix: np.ndarray) -> np.ndarray:
    """Unit quaternion (4,) ``(qx, qy, qz, qw)``, ``qw >= 0``, of a rotation matrix (3, 3).

    Uses the largest of the four squared components (Shepperd's method) so that the result
    is accurate for every rotation, including those near 180 degrees.
    """
    rotation = np.asarray(matrix, dtype=float)
    trace = float(np.trace(rotation))
    squares = np.array(
        [
            1.0 + 2.0 * rotation[0, 0] - trace,
            1.0 + 2.0 * rotation[1, 1] - trace,
            1.0 + 2.0 * rotation[2, 2] - trace,
            1.0 + trace,
        ]
    )  # 4 qx^2, 4 qy^2, 4 qz^2, 4 qw^2
    largest = int(np.argmax(squares))
    scale = 2.0 * math.sqrt(max(squares[largest], 0.0))  # 4 |q_largest|
    skew = (
        rotation[2, 1] - rotation[1, 2],  # 4 qx qw
        rotation[0, 2] - rotation[2, 0],  # 4 qy qw
        rotation[1, 0] - rotation[0, 1],  # 4 qz qw
    )
    sym = (
        rotation[0, 1] + rotation[1, 0],  # 4 qx qy
        rotation[0, 2] + rotation[2, 0],  # 4 qx qz
        rotation[1, 2] + rotation[2, 1],  # 4 qy qz
    )
    if largest == 0:
        quaternion = np.array([scale / 4.0, sym[0] / scale, sym[1] / scale, skew[0] / scale])
    elif largest == 1:
        quaternion = np.array([sym[0] / scale, scale / 4.0, sym[2] / scale, skew[1] / scale])
    elif largest == 2:
        quaternion = np.array([sym[1] / scale, sym[2] / scale, scale / 4.0, skew[2] / scale])
    else:
        quaternion = np.array([skew[0] / scale, skew[1] / scale, skew[2] / scale, scale / 4.0])
    return canonical_quaternion(quaternion / np.linalg.norm(quaternion))


def axis_angle_quaternion(axis, angle: float) -> np.ndarray:
    """Quaternion (4,) of a rotation by ``angle`` (rad) about ``axis`` (3,) (any length > 0)."""
    axis = np.asarray(axis, dtype=float)
    norm = float(np.linalg.norm(axis))
    if axis.shape != (3,) or not math.isfinite(norm) or norm == 0.0:
        raise ValueError(f"axis: expected a non-zero finite 3-vector, got {axis.tolist()}")
    half = 0.5 * float(angle)
    return np.array([*(math.sin(half) * axis / norm), math.cos(half)])


def yaw_quaternion(yaw: float) -> np.ndarray:
    """Quaternion (4,) of a rotation by ``yaw`` (rad) about z."""
    return np.array([0.0, 0.0, math.sin(0.5 * yaw), math.cos(0.5 * yaw)])


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (3, 3); angles in rad."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(matrix: np.ndarray) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in rad with ``R = Rz(yaw) Ry(pitch) Rx(roll)``, pitch in [-pi/2, pi/2].

    At pitch = +-pi/2 (gimbal lock) roll is reported as 0 and yaw carries the whole rotation
    about the vertical.
    """
    rotation = np.asarray(matrix, dtype=float)
    pitch = math.asin(max(-1.0, min(1.0, -rotation[2, 0])))
    if abs(rotation[2, 0]) < 1.0 - 1e-12:
        roll = math.atan2(rotation[2, 1], rotation[2, 2])
        yaw = math.atan2(rotation[1, 0], rotation[0, 0])
    else:
        roll = 0.0
        yaw = math.atan2(-rotation[0, 1], rotation[1, 1])
    return roll, pitch, yaw


def yaw_about_z(quaternion: np.ndarray) -> float:
    """Yaw (rad, in [-pi, pi]) of an orientation about the z axis of its reference frame.

    The orientation ``q`` is split into a *twist* about z and a *swing* about a horizontal
    axis, ``q = swing * twist`` (equivalently ``twist * swing'``); the yaw is the twist angle::

        yaw = 2 atan2(qz, qw)

    (the z and w components of a product of a horizontal-axis rotation and a z rotation are
    ``qz = c_s t_z`` and ``qw = c_s t_w`` with ``c_s`` the cosine of half the swing angle, so
    their ratio does not depend on the swing). Consequences:

    * the result is exact for a yaw followed or preceded by a tilt of any size about any
      horizontal axis, so a body resting slightly tilted on the table (or seen through a
      slightly mis-levelled calibration) keeps its yaw;
    * the twist is the z rotation nearest to ``q`` (it maximises ``|<q, twist>|``);
    * compared with the Z-Y-X Euler yaw ``atan2(R[1,0], R[0,0])`` (the heading of the body's
      x axis) it differs by O(tilt^2) only; unlike the Euler yaw it stays defined at 90 deg
      of pitch and is singular only for a body turned upside down (``qz = qw = 0``), where
      ValueError is raised.
    """
    qx, qy, qz, qw = np.asarray(quaternion, dtype=float)
    if math.hypot(qz, qw) < 1e-9:
        raise ValueError(
            f"yaw undefined: orientation {[qx, qy, qz, qw]} is a half turn about a horizontal axis"
        )
    return 2.0 * math.atan2(qz, qw) if qw >= 0.0 else 2.0 * math.atan2(-qz, -qw)
