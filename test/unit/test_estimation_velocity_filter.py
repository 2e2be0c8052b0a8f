"""Constant-velocity Kalman filter on (x, y, yaw): lag (derived and measured), noise, wrapping,
irregular timing, jumps and settings validation."""

import math

import numpy as np
import pytest

from parapush.estimation.velocity_filter import (
    FilterEvent,
    PoseFilterSettings,
    PoseVelocityFilter,
    steady_state_gains,
    steady_state_lag,
    steady_state_position_bias,
    steady_state_std,
)

PERIOD = 1.0 / 120.0
DEFAULTS = PoseFilterSettings()


def riccati_by_iteration(density, variance, period, steps=20000):
    """Independent steady-state gain: iterate the Kalman recursion of one axis."""
    transition = np.array([[1.0, period], [0.0, 1.0]])
    noise = density * np.array([[period**3 / 3, period**2 / 2], [period**2 / 2, period]])
    covariance = np.eye(2)
    for _ in range(steps):
        predicted = transition @ covariance @ transition.T + noise
        gain = predicted[:, 0] / (predicted[0, 0] + variance)
        covariance = predicted - np.outer(gain, predicted[0])
    return gain


def test_steady_state_gains_match_the_iterated_recursion():
    expected = riccati_by_iteration(DEFAULTS.acceleration_density, DEFAULTS.position_noise**2, PERIOD)
    np.testing.assert_allclose(steady_state_gains(DEFAULTS, PERIOD)[0], expected, rtol=1e-8)


def test_documented_lag_of_the_defaults():
    # The module docstring states, at 120 Hz for x, y and yaw: tau_v = 0.0915 s, a position
    # bias of 4.2e-3 s^2 * a, and noise std 0.18 mm and 1.5 mm/s (yaw 1.8 mrad, 15 mrad/s).
    np.testing.assert_allclose(steady_state_lag(DEFAULTS, PERIOD), 0.0915, atol=5e-4)
    np.testing.assert_allclose(steady_state_position_bias(DEFAULTS, PERIOD), 4.2e-3, atol=5e-5)
    std = steady_state_std(DEFAULTS, PERIOD)
    np.testing.assert_allclose(std[:2, 0], 0.18e-3, atol=0.01e-3)
    np.testing.assert_allclose(std[:2, 1], 1.5e-3, atol=0.05e-3)
    np.testing.assert_allclose(std[2], [1.8e-3, 15e-3], rtol=0.03)
    assert steady_state_lag(DEFAULTS, 1 / 240)[0] == pytest.approx(0.078, abs=5e-4)
    assert steady_state_lag(DEFAULTS, 1 / 100)[0] == pytest.approx(0.095, abs=5e-4)


def test_lag_formula_is_the_alpha_beta_result():
    # alpha-beta filter under constant acceleration: velocity error = a T (alpha/beta - 1/2).
    gains = steady_state_gains(DEFAULTS, PERIOD)
    alpha, beta = gains[0, 0], gains[0, 1] * PERIOD
    assert steady_state_lag(DEFAULTS, PERIOD)[0] == pytest.approx(PERIOD * (alpha / beta - 0.5))


def test_measured_lag_under_constant_acceleration_is_the_derived_lag():
    """Noise-free constant acceleration (x, y and yaw): after settling the velocity estimate
    equals the true velocity tau_v earlier, and the position trails by a constant."""
    acceleration = np.array([0.1, -0.05, 0.8])  # m/s^2, m/s^2, rad/s^2
    initial_velocity = np.array([0.02, 0.03, 0.1])
    estimator = PoseVelocityFilter()
    times = np.arange(0, 600) * PERIOD
    for time in times:
        pose = initial_velocity * time + 0.5 * acceleration * time**2
        pose[2] = (pose[2] + math.pi) % (2 * math.pi) - math.pi  # measurements arrive wrapped
        estimator.update(time, pose)
    final = times[-1]
    velocity_error = initial_velocity + acceleration * final - estimator.velocity
    measured_lag = velocity_error / acceleration
    np.testing.assert_allclose(measured_lag, steady_state_lag(DEFAULTS, PERIOD), rtol=1e-3)
    np.testing.assert_allclose(measured_lag, 0.0915, atol=5e-4)
    true_pose = initial_velocity * final + 0.5 * acceleration * final**2
    position_error = true_pose - estimator.pose
    np.testing.assert_allclose(
        position_error / acceleration, steady_state_position_bias(DEFAULTS, PERIOD), rtol=1e-3
    )


def test_constant_velocity_has_no_steady_state_error():
    velocity = np.array([0.1, -0.025, 0.5])
    estimator = PoseVelocityFilter()
    for step in range(600):
        estimator.update(step * PERIOD, np.array([0.3, 0.2, 0.1]) + velocity * step * PERIOD)
    np.testing.assert_allclose(estimator.velocity, velocity, atol=1e-9)
    np.testing.assert_allclose(estimator.pose, np.array([0.3, 0.2, 0.1]) + velocity * 599 * PERIOD, atol=1e-9)


def test_noise_of_the_estimates_matches_the_steady_state_prediction():
    rng = np.random.default_rng(3)
    estimator = PoseVelocityFilter()
    velocities, positions = [], []
    for step in range(12000):
        measurement = rng.normal(0.0, [0.0005, 0.0005, 0.005])
        estimator.update(step * PERIOD, measurement)
        if step > 240:
            velocities.append(estimator.velocity)
            positions.append(estimator.pose)
    predicted = steady_state_std(DEFAULTS, PERIOD)
    np.testing.assert_allclose(np.std(positions, axis=0), predicted[:, 0], rtol=0.1)
    np.testing.assert_allclose(np.std(velocities, axis=0), predicted[:, 1], rtol=0.15)


def test_yaw_crossing_pi_is_unwrapped():
    estimator = PoseVelocityFilter()
    yaw_rate = 3.0  # rad/s: crosses +-pi every ~2 s
    for step in range(1200):
        time = step * PERIOD
        yaw = (2.5 + yaw_rate * time + math.pi) % (2 * math.pi) - math.pi
        assert estimator.update(time, [0.0, 0.0, yaw]) in (FilterEvent.INITIALIZED, FilterEvent.UPDATED)
        if step > 120:
            assert estimator.velocity[2] == pytest.approx(yaw_rate, abs=1e-3)
    assert estimator.pose[2] == pytest.approx(2.5 + yaw_rate * 1199 * PERIOD, abs=1e-6)  # continuous


def test_irregular_timing_and_dropped_frames():
    """Jittered sample times (+-1.5 ms) and 30 % dropped frames, noisy samples of a body at
    (60, -40) mm/s: velocity error RMS stays within the 5 mm/s acceptance."""
    rng = np.random.default_rng(11)
    velocity = np.array([0.06, -0.04, 0.3])
    estimator = PoseVelocityFilter()
    errors = []
    for step in range(2400):
        if rng.random() < 0.3:
            continue
        time = step * PERIOD + rng.uniform(-0.0015, 0.0015)
        estimator.update(time, velocity * time + rng.normal(0.0, [0.0005, 0.0005, 0.005]))
        if time > 1.0:
            errors.append(estimator.velocity - velocity)
    rms = np.sqrt(np.mean(np.square(errors), axis=0))
    assert np.all(rms[:2] < 0.005)
    assert math.hypot(*rms[:2]) < 0.005


def test_a_jump_restarts_the_filter_at_the_measurement():
    estimator = PoseVelocityFilter()
    for step in range(100):
        estimator.update(step * PERIOD, [0.05 * step * PERIOD, 0.0, 0.0])
    assert estimator.update(100 * PERIOD, [0.3, 0.1, 0.0]) is FilterEvent.JUMP_RESET
    np.testing.assert_allclose(estimator.pose, [0.3, 0.1, 0.0])
    np.testing.assert_allclose(estimator.velocity, 0.0)
    assert estimator.update(101 * PERIOD, [0.3, 0.1, 1.0]) is FilterEvent.JUMP_RESET  # 1 rad > 0.5


def test_time_must_increase_and_poses_be_finite():
    estimator = PoseVelocityFilter()
    estimator.update(1.0, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="does not follow"):
        estimator.update(1.0, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="pose"):
        estimator.update(2.0, [0.0, math.nan, 0.0])
    with pytest.raises(RuntimeError, match="no measurement"):
        PoseVelocityFilter().predict(0.0)


def test_predict_extrapolates_without_changing_the_filter():
    estimator = PoseVelocityFilter()
    for step in range(240):
        estimator.update(step * PERIOD, [0.1 * step * PERIOD, 0.0, 0.0])
    before = estimator.pose
    pose, velocity = estimator.predict(estimator.time + 0.05)
    assert pose[0] == pytest.approx(before[0] + 0.005, abs=1e-9)
    assert velocity[0] == pytest.approx(0.1, abs=1e-9)
    np.testing.assert_array_equal(estimator.pose, before)


@pytest.mark.parametrize(
    "field",
    [
        "position_noise",
        "yaw_noise",
        "acceleration_density",
        "angular_acceleration_density",
        "initial_speed_std",
        "initial_yaw_rate_std",
        "jump_distance",
        "jump_angle",
    ],
)
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, "a"])
def test_settings_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        PoseFilterSettings(**{field: value})


@pytest.mark.parametrize("field", ["position_noise", "yaw_noise", "acceleration_density",
                                   "angular_acceleration_density", "initial_speed_std", "initial_yaw_rate_std"])
def test_noise_settings_must_be_positive(field):
    with pytest.raises(ValueError, match=field):
        PoseFilterSettings(**{field: 0.0})


def test_jump_thresholds_may_be_disabled():
    settings = PoseFilterSettings(jump_distance=0.0, jump_angle=0.0)
    estimator = PoseVelocityFilter(settings)
    estimator.update(0.0, [0.0, 0.0, 0.0])
    assert estimator.update(PERIOD, [1.0, 0.0, 3.0]) is FilterEvent.UPDATED
    only_angle = PoseVelocityFilter(PoseFilterSettings(jump_distance=0.0))
    only_angle.update(0.0, [0.0, 0.0, 0.0])
    assert only_angle.update(PERIOD, [1.0, 0.0, 0.0]) is FilterEvent.UPDATED
    assert only_angle.update(2 * PERIOD, [1.0, 0.0, 3.0]) is FilterEvent.JUMP_RESET
    with pytest.raises(ValueError, match="position_noise: expected a finite number >= 1e-06 and <= 0.1"):
        PoseFilterSettings(position_noise=math.inf)
