"""The executor's input and output values: planar pusher controls and end-effector twists.

ROS-free stand-ins for ``parareal_pushing/PusherControl`` and ``geometry_msgs/TwistStamped``
(MoveIt Servo's input); the executor node converts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from parapush.validation import check_positive, check_real


@dataclass(frozen=True)
class PlanarControl:
    """A constant pusher velocity in the table frame held for a duration (one control of the papers).

    Attributes:
        vx_m_s, vy_m_s: pusher velocity along the table x and y axes, m/s.
        duration_s: how long it is held, s (> 0).
    """

    vx_m_s: float
    vy_m_s: float
    duration_s: float

    def __post_init__(self) -> None:
        for name in ("vx_m_s", "vy_m_s", "duration_s"):
            check_real(name, getattr(self, name))
        check_positive("duration_s", self.duration_s)

    @property
    def velocity(self) -> np.ndarray:
        """(2,) velocity in the table frame, m/s."""
        return np.array([self.vx_m_s, self.vy_m_s], dtype=np.float64)


@dataclass(frozen=True, eq=False)
class TwistCommand:
    """An end-effector velocity command (what a ``geometry_msgs/TwistStamped`` carries): what
    the executor sends and what the simulated arm receives.

    Attributes:
        stamp_s: command time, s (the sender's clock; receivers time out on receipt).
        frame_id: frame of the velocities (the robot base frame).
        linear: (3,) linear velocity, m/s.
        angular: (3,) angular velocity, rad/s.
    """

    stamp_s: float
    frame_id: str
    linear: np.ndarray
    angular: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self) -> None:
        check_real("stamp_s", self.stamp_s)
        if not isinstance(self.frame_id, str) or not self.frame_id:
            raise ValueError(f"frame_id: expected a non-empty string, got {self.frame_id!r}")
        for name in ("linear", "angular"):
            array = np.array(getattr(self, name), dtype=np.float64)
            if array.shape != (3,) or not np.all(np.isfinite(array)):
                raise ValueError(f"{name}: expected a finite (3,) vector, got {getattr(self, name)!r}")
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @property
    def is_zero(self) -> bool:
        return not (np.any(self.linear) or np.any(self.angular))
