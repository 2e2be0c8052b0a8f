"""The rigid transform from the table frame to the robot base frame.

``p_base = rotation @ p_table + translation``; velocities only rotate
(``v_base = rotation @ v_table``). Build it from a planar pose of the table in the base
frame (:meth:`RigidTransform.planar`), from a quaternion, or from a node parameter list
(:meth:`RigidTransform.from_parameters`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

_ORTHONORMAL_TOLERANCE = 1e-9


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class RigidTransform:
    """A proper rigid transform (rotation with determinant +1, then translation).

    Attributes:
        rotation: (3, 3) rotation matrix, table axes expressed in the base frame.
        translation: (3,) position of the table origin in the base frame, m.
    """

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        rotation = np.asarray(self.rotation, dtype=np.float64)
        translation = np.asarray(self.translation, dtype=np.float64)
        if rotation.shape != (3, 3) or not np.all(np.isfinite(rotation)):
            raise ValueError(f"rotation: expected a finite (3, 3) matrix, got shape {rotation.shape}")
        if translation.shape != (3,) or not np.all(np.isfinite(translation)):
            raise ValueError(f"translation: expected a finite (3,) vector, got shape {translation.shape}")
        if not np.allclose(rotation.T @ rotation, np.eye(3), atol=_ORTHONORMAL_TOLERANCE, rtol=0):
            raise ValueError("rotation: expected an orthonormal matrix (R^T R = I)")
        if np.linalg.det(rotation) < 0:
            raise ValueError("rotation: expected a proper rotation (determinant +1), got a reflection")
        object.__setattr__(self, "rotation", _frozen(rotation))
        object.__setattr__(self, "translation", _frozen(translation))

    @classmethod
    def identity(cls) -> RigidTransform:
        return cls()

    @classmethod
    def planar(
        cls, *, yaw_rad: float, x_m: float = 0.0, y_m: float = 0.0, z_m: float = 0.0
    ) -> RigidTransform:
        """The table frame rotated by ``yaw_rad`` about the base z axis, its origin at (x, y, z) m."""
        for name, value in (("yaw_rad", yaw_rad), ("x_m", x_m), ("y_m", y_m), ("z_m", z_m)):
            if not math.isfinite(value):
                raise ValueError(f"{name}: expected a finite number, got {value!r}")
        cosine, sine = math.cos(yaw_rad), math.sin(yaw_rad)
        rotation = np.array([[cosine, -sine, 0.0], [sine, cosine, 0.0], [0.0, 0.0, 1.0]])
        return cls(rotation=rotation, translation=np.array([x_m, y_m, z_m]))

    @classmethod
    def from_quaternion(
        cls, *, quaternion_xyzw: Sequence[float], translation: Sequence[float]
    ) -> RigidTransform:
        """From a unit quaternion (x, y, z, w), normalised here, and a translation (m)."""
        quaternion = np.asarray(quaternion_xyzw, dtype=np.float64)
        norm = float(np.linalg.norm(quaternion)) if quaternion.shape == (4,) else 0.0
        if not math.isfinite(norm) or norm < 1e-9:
            raise ValueError(
                f"quaternion_xyzw: expected 4 finite numbers, not all zero, got {quaternion_xyzw!r}"
            )
        x, y, z, w = quaternion / norm
        rotation = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )
        return cls(rotation=rotation, translation=np.asarray(translation, dtype=np.float64))

    @classmethod
    def from_parameters(cls, values: Sequence[float]) -> RigidTransform:
        """From a parameter list: ``[x, y, z, yaw]`` (m, rad) or ``[x, y, z, qx, qy, qz, qw]``."""
        values = [float(value) for value in values]
        if len(values) == 4:
            x, y, z, yaw = values
            return cls.planar(yaw_rad=yaw, x_m=x, y_m=y, z_m=z)
        if len(values) == 7:
            return cls.from_quaternion(quaternion_xyzw=values[3:], translation=values[:3])
        raise ValueError(
            f"table_to_base: expected [x, y, z, yaw] or [x, y, z, qx, qy, qz, qw], got {len(values)} values"
        )

    def rotate(self, vectors: np.ndarray) -> np.ndarray:
        """Rotate vectors of shape (..., 3) (velocities, directions) into the base frame."""
        return np.asarray(vectors, dtype=np.float64) @ self.rotation.T

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Transform points of shape (..., 3) (m) into the base frame."""
        return self.rotate(points) + self.translation

    def inverse(self) -> RigidTransform:
        """The base -> table transform."""
        return RigidTransform(rotation=self.rotation.T, translation=-(self.rotation.T @ self.translation))
