"""Planar pose and velocity from noisy, irregularly timed mocap samples: a constant-velocity
Kalman filter on (x, y, yaw).

Model (independent per axis, state = [position, velocity])::

    position' = position + dt velocity           acceleration = white noise of spectral
    velocity' = velocity                         density q (m^2/s^3, rad^2/s^3 for yaw)
    measurement = position + noise (std sigma)

The process noise over a step ``dt`` is ``q [[dt^3/3, dt^2/2], [dt^2/2, dt]]``, so irregular
sample times and dropped frames (a longer ``dt``) need no special case. Yaw is kept unwrapped
(continuous) inside the filter; each measured yaw is compared with the prediction modulo
2 pi, so a body crossing +-pi does not jump. A measurement further than ``jump_distance`` /
``jump_angle`` from the prediction (a marker swap, a body picked up and put down elsewhere)
re-initialises the filter there instead of being averaged in.

Lag
---
At a steady sample period T the filter converges to fixed gains ``k_p`` (dimensionless) and
``k_v`` (1/s) (an alpha-beta filter with alpha = k_p, beta = k_v T). For a body moving at
constant velocity the steady-state errors are zero: the model is constant velocity, the pose
does not trail. Under a constant acceleration ``a`` the steady-state errors of the updated
estimate follow from the error recursion (e = true - estimated position, e_v the same for
velocity, e- the error of the prediction)::

    e- = e + T e_v + a T^2 / 2        e' = (1 - k_p) e-        e_v' = e_v + a T - k_v e-

whose fixed point is ``e- = a T / k_v`` and::

    velocity error e_v = a (k_p / k_v - T / 2) = a * tau_v    (the velocity estimate is
                                                               the true velocity tau_v ago)
    position error e   = a T (1 - k_p) / k_v                  (a constant offset, m)

With the defaults at 120 Hz (sigma = 0.5 mm, q = 1e-4 m^2/s^3; yaw: 0.005 rad and
1e-2 rad^2/s^3, the same ratio q / sigma^2): **tau_v = 0.0915 s** (91.5 ms) for x, y and
yaw, position error 4.2e-3 s^2 * a (0.42 mm at 0.1 m/s^2). The measurement noise alone
leaves 0.18 mm and 1.5 mm/s standard deviation per axis (velocity-vector error about
2.2 mm/s RMS; yaw 1.8 mrad and 15 mrad/s). At 240 Hz tau_v is 78 ms, at 100 Hz 95 ms.
:func:`steady_state_lag`, :func:`steady_state_position_bias` and :func:`steady_state_std`
compute these numbers for any settings. The trade-off is set by ``acceleration_density``:
ten times larger roughly halves the lag (tau_v ~ q^(-1/4)) and multiplies the velocity noise
by 2.4 (~ q^(3/8)).

The lag of the estimate behind *real time* is this filter lag plus the transport latency
(exposure to receipt), which the tracker removes from the stamps.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_discrete_are, solve_discrete_lyapunov

from parapush.settings import check_settings, setting
from parapush.validation import check_positive


@dataclass(frozen=True)
class PoseFilterSettings:
    """Noise model and re-initialisation thresholds of :class:`PoseVelocityFilter`; the state
    estimator's ``filter.*`` parameters (:class:`~parapush.estimation.estimator_settings.EstimatorSettings`).

    Attributes:
        position_noise: std of one mocap position sample, m.
        yaw_noise: std of one mocap yaw sample, rad.
        acceleration_density: spectral density of the random acceleration, m^2/s^3.
        angular_acceleration_density: the same for yaw, rad^2/s^3.
        initial_speed_std: std of the velocity at (re-)initialisation, m/s.
        initial_yaw_rate_std: std of the yaw rate at (re-)initialisation, rad/s.
        jump_distance: a measurement this far (m) from the predicted position re-initialises
            the filter (0: never).
        jump_angle: the same for yaw, rad (0: never).
    """

    position_noise: float = setting(0.0005, "std of one mocap position sample", unit="m", minimum=1e-6, maximum=0.1)
    yaw_noise: float = setting(0.005, "std of one mocap yaw sample", unit="rad", minimum=1e-6, maximum=1.0)
    acceleration_density: float = setting(
        1e-4, "random-acceleration density (more: less lag, more velocity noise)", unit="m^2/s^3",
        minimum=1e-9, maximum=100.0,
    )
    angular_acceleration_density: float = setting(1e-2, "the same for yaw", unit="rad^2/s^3",
                                                  minimum=1e-9, maximum=1e4)
    initial_speed_std: float = setting(0.2, "velocity std at (re)initialisation", unit="m/s",
                                       minimum=1e-6, maximum=100.0)
    initial_yaw_rate_std: float = setting(2.0, "yaw-rate std at (re)initialisation", unit="rad/s",
                                          minimum=1e-6, maximum=1000.0)
    jump_distance: float = setting(0.03, "a measurement this far from the prediction restarts the filter "
                                   "(0: never)", unit="m", minimum=0.0, maximum=10.0)
    jump_angle: float = setting(0.5, "the same for yaw (0: never)", unit="rad", minimum=0.0, maximum=10.0)

    def __post_init__(self) -> None:
        check_settings(self)

    def jumped(self, distance: float, angle: float) -> bool:
        """Whether an innovation of ``distance`` m and ``angle`` rad (>= 0) is a jump (a
        threshold of 0 never is)."""
        return 0.0 < self.jump_distance < distance or 0.0 < self.jump_angle < angle

    @property
    def measurement_variance(self) -> np.ndarray:
        """(3,) variance of one (x, y, yaw) sample: m^2, m^2, rad^2."""
        return np.array([self.position_noise, self.position_noise, self.yaw_noise]) ** 2

    @property
    def process_density(self) -> np.ndarray:
        """(3,) acceleration spectral densities of x, y, yaw."""
        return np.array(
            [self.acceleration_density, self.acceleration_density, self.angular_acceleration_density]
        )

    @property
    def initial_velocity_variance(self) -> np.ndarray:
        """(3,) velocity variance at (re-)initialisation."""
        return np.array([self.initial_speed_std, self.initial_speed_std, self.initial_yaw_rate_std]) ** 2


class FilterEvent(enum.Enum):
    """What :meth:`PoseVelocityFilter.update` did with a measurement."""

    INITIALIZED = "initialized"
    UPDATED = "updated"
    JUMP_RESET = "jump_reset"


def _process_noise(density: np.ndarray, step: float) -> np.ndarray:
    """(3, 2, 2) process noise covariance over ``step`` s."""
    base = np.array([[step**3 / 3.0, step**2 / 2.0], [step**2 / 2.0, step]])
    return density[:, None, None] * base


class PoseVelocityFilter:
    """Constant-velocity Kalman filter on a planar pose (x, y, yaw); see the module docstring.

    Times are in s on any clock that increases; poses in m, m, rad.
    """

    def __init__(self, settings: PoseFilterSettings | None = None) -> None:
        self.settings = settings if settings is not None else PoseFilterSettings()
        self._time: float | None = None
        self._pose = np.zeros(3)
        self._velocity = np.zeros(3)
        self._covariance = np.zeros((3, 2, 2))

    @property
    def initialized(self) -> bool:
        return self._time is not None

    @property
    def time(self) -> float | None:
        """Time of the last measurement, s (None before the first)."""
        return self._time

    @property
    def pose(self) -> np.ndarray:
        """(3,) estimated (x m, y m, yaw rad) at :attr:`time`; yaw continuous (not wrapped)."""
        self._require_initialized()
        return self._pose.copy()

    @property
    def velocity(self) -> np.ndarray:
        """(3,) estimated (vx m/s, vy m/s, yaw rate rad/s) at :attr:`time`."""
        self._require_initialized()
        return self._velocity.copy()

    @property
    def covariance(self) -> np.ndarray:
        """(3, 2, 2) per-axis covariance of [position, velocity]."""
        self._require_initialized()
        return self._covariance.copy()

    def reset(self, time: float, pose) -> None:
        """Start again at ``pose`` (3,) measured at ``time`` with zero velocity (large variance)."""
        pose = self._check_pose(pose)
        self._time = float(time)
        self._pose = pose
        self._velocity = np.zeros(3)
        self._covariance = np.zeros((3, 2, 2))
        self._covariance[:, 0, 0] = self.settings.measurement_variance
        self._covariance[:, 1, 1] = self.settings.initial_velocity_variance

    def update(self, time: float, pose) -> FilterEvent:
        """Incorporate a pose (3,) (x m, y m, yaw rad) measured at ``time`` s.

        Raises:
            ValueError: if ``time`` does not follow the previous measurement, or the pose is
                not 3 finite numbers.
        """
        if not math.isfinite(time):
            raise ValueError(f"time: must be finite, got {time!r}")
        if self._time is None:
            self.reset(time, pose)
            return FilterEvent.INITIALIZED
        step = float(time) - self._time
        if step <= 0.0:
            raise ValueError(f"time: {time!r} does not follow the previous measurement at {self._time!r}")
        measurement = self._check_pose(pose)
        predicted_pose = self._pose + step * self._velocity
        innovation = measurement - predicted_pose
        innovation[2] = (innovation[2] + math.pi) % (2.0 * math.pi) - math.pi
        if self.settings.jumped(math.hypot(innovation[0], innovation[1]), abs(innovation[2])):
            self.reset(time, measurement)
            return FilterEvent.JUMP_RESET
        covariance = self._covariance
        p_pp = covariance[:, 0, 0] + 2.0 * step * covariance[:, 0, 1] + step * step * covariance[:, 1, 1]
        p_pv = covariance[:, 0, 1] + step * covariance[:, 1, 1]
        p_vv = covariance[:, 1, 1]
        noise = _process_noise(self.settings.process_density, step)
        p_pp, p_pv, p_vv = p_pp + noise[:, 0, 0], p_pv + noise[:, 0, 1], p_vv + noise[:, 1, 1]
        innovation_variance = p_pp + self.settings.measurement_variance
        gain_position = p_pp / innovation_variance
        gain_velocity = p_pv / innovation_variance
        self._pose = predicted_pose + gain_position * innovation
        self._velocity = self._velocity + gain_velocity * innovation
        updated = np.empty((3, 2, 2))
        updated[:, 0, 0] = (1.0 - gain_position) * p_pp
        updated[:, 0, 1] = updated[:, 1, 0] = (1.0 - gain_position) * p_pv
        updated[:, 1, 1] = p_vv - gain_velocity * p_pv
        self._covariance = updated
        self._time = float(time)
        return FilterEvent.UPDATED

    def predict(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        """Constant-velocity extrapolation to ``time`` s, without changing the filter.

        Returns:
            pose (3,) (m, m, rad, yaw continuous) and velocity (3,) (m/s, m/s, rad/s).
        """
        self._require_initialized()
        return self._pose + (float(time) - self._time) * self._velocity, self._velocity.copy()

    def _require_initialized(self) -> None:
        if self._time is None:
            raise RuntimeError("the filter has no measurement yet")

    @staticmethod
    def _check_pose(pose) -> np.ndarray:
        values = np.asarray(pose, dtype=float)
        if values.shape != (3,) or not np.all(np.isfinite(values)):
            raise ValueError(f"pose: expected 3 finite numbers (x, y, yaw), got {np.asarray(pose).tolist()}")
        return values.copy()


def steady_state_gains(settings: PoseFilterSettings, period: float) -> np.ndarray:
    """(3, 2) steady-state Kalman gains (k_p, k_v in 1/s) of x, y, yaw at sample ``period`` s."""
    period = check_positive("period", period)
    transition = np.array([[1.0, period], [0.0, 1.0]])
    observation = np.array([[1.0, 0.0]])
    noise = _process_noise(settings.process_density, period)
    gains = np.empty((3, 2))
    for axis in range(3):
        variance = settings.measurement_variance[axis]
        predicted = solve_discrete_are(transition.T, observation.T, noise[axis], np.array([[variance]]))
        gains[axis] = predicted[:, 0] / (predicted[0, 0] + variance)
    return gains


def steady_state_lag(settings: PoseFilterSettings, period: float) -> np.ndarray:
    """(3,) velocity lag tau_v = k_p / k_v - T / 2 (s) of x, y, yaw: under a constant
    acceleration a the steady-state velocity error is a tau_v (see the module docstring)."""
    gains = steady_state_gains(settings, period)
    return gains[:, 0] / gains[:, 1] - 0.5 * period


def steady_state_position_bias(settings: PoseFilterSettings, period: float) -> np.ndarray:
    """(3,) steady-state position error per unit constant acceleration, T (1 - k_p) / k_v (s^2)."""
    gains = steady_state_gains(settings, period)
    return period * (1.0 - gains[:, 0]) / gains[:, 1]


def steady_state_std(settings: PoseFilterSettings, period: float) -> np.ndarray:
    """(3, 2) standard deviations of the updated (position, velocity) of x, y, yaw caused by
    the measurement noise alone (a body at rest or at constant velocity), at a steady sample
    ``period`` s: m, m/s; rad, rad/s.

    The steady-state filter is the linear recursion ``e' = A e + K n`` with
    ``A = (I - K H) F``; its error covariance solves ``S = A S A^T + K sigma^2 K^T``. (The
    Kalman covariance itself is larger: it also budgets for the modelled random acceleration.)
    """
    period = check_positive("period", period)
    transition = np.array([[1.0, period], [0.0, 1.0]])
    gains = steady_state_gains(settings, period)
    result = np.empty((3, 2))
    for axis in range(3):
        gain = gains[axis]
        propagation = (np.eye(2) - np.outer(gain, [1.0, 0.0])) @ transition
        covariance = solve_discrete_lyapunov(
            propagation, np.outer(gain, gain) * settings.measurement_variance[axis]
        )
        result[axis] = np.sqrt(np.diag(covariance))
    return result
