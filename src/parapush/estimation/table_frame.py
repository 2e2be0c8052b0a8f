"""The rigid transform from the mocap (Motive) frame to the table frame, and planar projection.

Frames
------
*Mocap frame*: the frame Motive streams poses in. Motive 1.7+ uses a right-handed frame
with **Y up**; the ground plane is set with the calibration square (CS-100/200/400: long
arm +Z, short arm +X, origin at the square's corner). Motive can be told to stream Z up
instead (Streaming settings, "Up Axis"); then the mocap frame is already z up.

*Table frame*: origin at the centre of the table top, x along the table's length, y
across it, z up (see :mod:`parapush.scene.description`).

The transform maps mocap coordinates to table coordinates::

    p_table = R p_mocap + t          R = rotation (table <- mocap), t = translation (m)

``t`` is the position of the mocap origin in the table frame. Presets:

* ``TableTransform.y_up()``: Motive's default Y-up frame whose ground plane is the table
  top, axes ``table (x, y, z) = mocap (x, -z, y)``, i.e. R = Rx(+90 deg). With the
  calibration square lying on the table, table x runs along the short arm and table y
  *against* the long arm (right-handedness forces the sign).
* ``TableTransform.z_up()``: identity rotation, for a Z-up stream.

In practice the transform comes from :mod:`parapush.estimation.calibration`, which fits
it (any rotation) to points measured at known table positions.

Body orientation and yaw
------------------------
Motive gives each rigid body its *reference orientation* (identity quaternion) when the
body is created or its orientation is reset: the body axes are then parallel to the mocap
axes. The orientation of the *object* in the table frame is taken as::

    R_object = (R R_body R^T) Rz(yaw_offset)

``R R_body R^T`` is the rotation the body has undergone since its reference orientation,
expressed in table axes; ``yaw_offset`` (rad) is the object's table yaw when the body was in
its reference orientation (0 when the orientation was reset with the object at yaw 0 on the
table; see :func:`yaw_offset_from_observation`). The planar yaw is the twist of
``R_object`` about table z (:func:`parapush.estimation.rotations.yaw_about_z`), exact for
bodies tilted about any horizontal axis.

Marker-to-centre offsets: the body's position is its Motive pivot point (by default the
markers' centroid, often above the object's centre). ``centre_offset`` is the vector from the
pivot to the object's centre in the object frame above (x forward, z up at yaw 0), m; the
object's centre is ``R p_body + t + R_object centre_offset``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from parapush.estimation.rotations import (
    axis_angle_quaternion,
    canonical_quaternion,
    matrix_to_quaternion,
    quaternion_conjugate,
    quaternion_multiply,
    quaternion_to_matrix,
    rpy_to_matrix,
    unit_quaternion,
    yaw_about_z,
    yaw_quaternion,
)
from parapush.validation import check_finite_array
from parapush.yaml_file import read_yaml

#: Section of a transform YAML file holding the transform.
TRANSFORM_SECTION = "mocap_to_table"
#: Optional section written by the calibration tool (residuals, inputs); not read back.
CALIBRATION_SECTION = "calibration"
ROTATION_PRESETS = ("y_up", "z_up")


class TableFrameError(ValueError):
    """A table transform (or its YAML) is invalid; the message names the field."""


def _finite_vector(name: str, value: Any, length: int) -> np.ndarray:
    """``length`` finite numbers (:func:`~parapush.validation.check_finite_array` raising
    :class:`TableFrameError`)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TableFrameError(f"{name}: expected a list of {length} numbers, got {value!r}")
    try:
        return check_finite_array(name, value, (length,))
    except (TypeError, ValueError) as error:
        text = str(error)
        raise TableFrameError(text if text.startswith(f"{name}: ") else f"{name}: expected {length} numbers, "
                              f"got {value!r}") from None


@dataclass(frozen=True, eq=False)
class TablePose:
    """Pose of a body's centre in the table frame (what a TF table -> body carries).

    Attributes:
        translation: (3,) centre position (x, y, z), m.
        rotation: (4,) orientation of the object frame, unit quaternion (qx, qy, qz, qw).
    """

    translation: np.ndarray
    rotation: np.ndarray

    @property
    def yaw(self) -> float:
        """Twist of the orientation about table z, rad in [-pi, pi]."""
        return yaw_about_z(self.rotation)

    @property
    def planar(self) -> np.ndarray:
        """(3,) planar pose (x m, y m, yaw rad)."""
        return np.array([self.translation[0], self.translation[1], self.yaw])


@dataclass(frozen=True)
class TableTransform:
    """Rigid transform p_table = R p_mocap + t (see the module docstring for conventions).

    Attributes:
        rotation: (qx, qy, qz, qw) unit quaternion of R (table <- mocap).
        translation: (x, y, z), m: the mocap origin in the table frame.
    """

    rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        rotation = _finite_vector("rotation", self.rotation, 4)
        try:
            rotation = unit_quaternion(rotation, "rotation")
        except ValueError as error:
            raise TableFrameError(str(error)) from None
        translation = _finite_vector("translation", self.translation, 3)
        object.__setattr__(self, "rotation", tuple(float(v) for v in canonical_quaternion(rotation)))
        object.__setattr__(self, "translation", tuple(float(v) for v in translation))
        object.__setattr__(self, "_matrix", quaternion_to_matrix(self.rotation))

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_matrix(cls, matrix: np.ndarray, translation=(0.0, 0.0, 0.0)) -> TableTransform:
        """From a rotation matrix (3, 3) (checked orthonormal, det +1) and a translation (3,), m."""
        matrix = np.asarray(matrix, dtype=float)
        if matrix.shape != (3, 3) or not np.all(np.isfinite(matrix)):
            raise TableFrameError(f"rotation matrix: expected finite (3, 3), got shape {matrix.shape}")
        if not np.allclose(matrix @ matrix.T, np.eye(3), atol=1e-6) or np.linalg.det(matrix) < 0.0:
            raise TableFrameError("rotation matrix: not a proper rotation (orthonormal with det +1)")
        return cls(tuple(matrix_to_quaternion(matrix)), tuple(translation))

    @classmethod
    def from_rpy(cls, roll: float, pitch: float, yaw: float, translation=(0.0, 0.0, 0.0)) -> TableTransform:
        """From fixed-axis roll/pitch/yaw (rad), R = Rz(yaw) Ry(pitch) Rx(roll)."""
        angles = _finite_vector("rpy", (roll, pitch, yaw), 3)
        return cls.from_matrix(rpy_to_matrix(*angles), translation)

    @classmethod
    def y_up(cls, translation=(0.0, 0.0, 0.0)) -> TableTransform:
        """Motive's default Y-up frame: table (x, y, z) = mocap (x, -z, y), R = Rx(+90 deg)."""
        return cls(tuple(axis_angle_quaternion((1.0, 0.0, 0.0), 0.5 * math.pi)), tuple(translation))

    @classmethod
    def z_up(cls, translation=(0.0, 0.0, 0.0)) -> TableTransform:
        """A Z-up mocap frame whose axes are the table's: identity rotation."""
        return cls((0.0, 0.0, 0.0, 1.0), tuple(translation))

    # -- application -------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """R (3, 3), table <- mocap."""
        return self._matrix.copy()

    def inverse(self) -> TableTransform:
        """The table -> mocap transform, p_mocap = R^T (p_table - t)."""
        matrix_t = self._matrix.T
        return TableTransform(
            tuple(quaternion_conjugate(self.rotation)), tuple(-matrix_t @ np.asarray(self.translation))
        )

    def points_to_table(self, points: np.ndarray) -> np.ndarray:
        """Mocap points (..., 3), m, in the table frame (..., 3), m."""
        points = np.asarray(points, dtype=float)
        if points.shape[-1:] != (3,):
            raise ValueError(f"points: expected shape (..., 3), got {points.shape}")
        return points @ self._matrix.T + np.asarray(self.translation)

    def rotation_to_table(self, body_rotation: np.ndarray) -> np.ndarray:
        """Rotation (4,) the body has undergone since its reference orientation, in table axes.

        ``body_rotation`` is the body's mocap-frame orientation (qx, qy, qz, qw); the result is
        the quaternion of R R_body R^T.
        """
        rotation = np.asarray(self.rotation)
        return quaternion_multiply(
            quaternion_multiply(rotation, np.asarray(body_rotation, dtype=float)),
            quaternion_conjugate(rotation),
        )

    def body_pose(
        self,
        position,
        orientation,
        centre_offset=(0.0, 0.0, 0.0),
        yaw_offset: float = 0.0,
    ) -> TablePose:
        """Table-frame pose of a body's centre from its mocap pose.

        Args:
            position: (3,) Motive pivot point of the body, m, mocap frame.
            orientation: (4,) unit quaternion (qx, qy, qz, qw), mocap frame.
            centre_offset: (3,) pivot -> object centre in the object frame, m.
            yaw_offset: object's table yaw at the body's reference orientation, rad.
        Raises:
            ValueError: if the position is not finite or the orientation not a unit quaternion.
        """
        position = np.asarray(position, dtype=float)
        if position.shape != (3,) or not np.all(np.isfinite(position)):
            raise ValueError(f"position: expected 3 finite numbers, got {np.asarray(position).tolist()}")
        body_rotation = unit_quaternion(orientation, "orientation")
        object_rotation = canonical_quaternion(
            quaternion_multiply(self.rotation_to_table(body_rotation), yaw_quaternion(yaw_offset))
        )
        offset = quaternion_to_matrix(object_rotation) @ np.asarray(centre_offset, dtype=float)
        return TablePose(self.points_to_table(position) + offset, object_rotation)

    def mocap_frame_pose(self) -> TablePose:
        """Pose of the mocap frame in the table frame: the static TF table -> mocap."""
        return TablePose(np.asarray(self.translation), np.asarray(self.rotation))

    # -- YAML --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data for the ``mocap_to_table`` section of a transform file."""
        return {
            "translation": [float(v) for v in self.translation],
            "rotation": {"quaternion": [float(v) for v in self.rotation]},
        }


def yaw_offset_from_observation(transform: TableTransform, orientation, known_yaw: float) -> float:
    """The ``yaw_offset`` (rad, wrapped to [-pi, pi)) that makes a body observed with mocap
    ``orientation`` (4,) report the table yaw ``known_yaw`` (rad)."""
    body_rotation = unit_quaternion(orientation, "orientation")
    observed = yaw_about_z(transform.rotation_to_table(body_rotation))
    return float((known_yaw - observed + math.pi) % (2.0 * math.pi) - math.pi)


def _rotation_from_dict(data: Any, where: str) -> np.ndarray:
    if not isinstance(data, Mapping):
        raise TableFrameError(f"{where}: expected a mapping with one of quaternion, rpy, rpy_degrees, preset")
    known = ("quaternion", "rpy", "rpy_degrees", "preset")
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise TableFrameError(f"{where}: unknown field(s) {unknown}; known: {list(known)}")
    given = [key for key in known if key in data]
    if len(given) != 1:
        raise TableFrameError(f"{where}: give exactly one of {list(known)}, got {given}")
    key = given[0]
    if key == "quaternion":
        quaternion = _finite_vector(f"{where}.quaternion", data[key], 4)
        try:
            return unit_quaternion(quaternion, f"{where}.quaternion")
        except ValueError as error:
            raise TableFrameError(str(error)) from None
    if key in ("rpy", "rpy_degrees"):
        angles = _finite_vector(f"{where}.{key}", data[key], 3)
        if key == "rpy_degrees":
            angles = np.radians(angles)
        return matrix_to_quaternion(rpy_to_matrix(*angles))
    preset = data[key]
    if preset not in ROTATION_PRESETS:
        raise TableFrameError(f"{where}.preset: expected one of {list(ROTATION_PRESETS)}, got {preset!r}")
    return np.asarray((TableTransform.y_up() if preset == "y_up" else TableTransform.z_up()).rotation)


def table_transform_from_dict(data: Any, where: str = TRANSFORM_SECTION) -> TableTransform:
    """Build a transform from the ``mocap_to_table`` section::

    translation: [x, y, z]              # m, mocap origin in the table frame
    rotation: {quaternion: [qx, qy, qz, qw]}   # or rpy: [r, p, y] (rad),
                                        # rpy_degrees: [...], preset: y_up | z_up
    """
    if not isinstance(data, Mapping):
        raise TableFrameError(f"{where}: expected a mapping with translation and rotation")
    unknown = sorted(set(data) - {"translation", "rotation"})
    if unknown:
        raise TableFrameError(f"{where}: unknown field(s) {unknown}; known: ['rotation', 'translation']")
    for key in ("translation", "rotation"):
        if key not in data:
            raise TableFrameError(f"{where}.{key}: missing")
    translation = _finite_vector(f"{where}.translation", data["translation"], 3)
    rotation = _rotation_from_dict(data["rotation"], f"{where}.rotation")
    return TableTransform(tuple(rotation), tuple(translation))


def load_table_transform(path: str | Path) -> TableTransform:
    """Read a transform file (as written by the calibration tool); errors name file and field."""
    path = Path(path)
    data = read_yaml(path, TableFrameError, "transform file")
    if not isinstance(data, Mapping) or TRANSFORM_SECTION not in data:
        raise TableFrameError(f"{path}: {TRANSFORM_SECTION}: missing")
    unknown = sorted(set(data) - {TRANSFORM_SECTION, CALIBRATION_SECTION})
    if unknown:
        raise TableFrameError(
            f"{path}: unknown section(s) {unknown}; known: {[TRANSFORM_SECTION, CALIBRATION_SECTION]}"
        )
    try:
        return table_transform_from_dict(data[TRANSFORM_SECTION])
    except TableFrameError as error:
        raise TableFrameError(f"{path}: {error}") from None


def save_table_transform(
    path: str | Path,
    transform: TableTransform,
    calibration: Mapping[str, Any] | None = None,
    header: str = "",
) -> None:
    """Write ``transform`` (and an optional ``calibration`` report section) as YAML.

    ``header`` lines are written as comments at the top of the file.
    """
    data: dict[str, Any] = {TRANSFORM_SECTION: transform.to_dict()}
    if calibration is not None:
        data[CALIBRATION_SECTION] = dict(calibration)
    comments = "".join(f"# {line}\n" for line in header.splitlines())
    comments += "# p_table = R p_mocap + translation; rotation is R (table <- mocap), (qx, qy, qz, qw).\n"
    Path(path).write_text(comments + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
