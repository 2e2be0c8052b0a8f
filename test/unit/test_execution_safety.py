"""SafetyFilter, case by case: every reason, its message, the latched stop and the watchdog."""

from __future__ import annotations

import math

import numpy as np
import pytest
from safety_limits_fixtures import box_limits

from parapush.execution.braking import braking_distance, max_speed_within
from parapush.execution.safety import SafetyFilter, SafetyLimits, SafetyReason

LIMITS = box_limits(half_x_m=0.30, half_y_m=0.20, max_speed_m_s=0.2, max_acceleration_m_s2=1.0)
PERIOD = 0.01


def ready_filter(position=(0.0, 0.0), now=10.0) -> SafetyFilter:
    safety = SafetyFilter(LIMITS, command_period_s=PERIOD)
    safety.update_pusher(position, stamp_s=now)
    return safety


def ramp(safety: SafetyFilter, desired, start: float, steps: int, position=None):
    now, output = start, None
    for _ in range(steps):
        if position is not None:
            safety.update_pusher(position, stamp_s=now)
        output = safety.filter(desired, now_s=now)
        now += PERIOD
    return output, now


def test_a_modest_command_passes_unchanged():
    safety = ready_filter()
    output = safety.filter([0.005, -0.005], now_s=10.0)
    np.testing.assert_array_equal(output.velocity, [0.005, -0.005])
    assert not output.modified and not output.stopped


def test_speed_is_scaled_down_keeping_the_direction():
    safety = ready_filter()
    output, _ = ramp(safety, [0.6, 0.8], 10.0, 40, position=(0.0, 0.0))
    assert math.hypot(*output.velocity) == pytest.approx(0.2)
    assert output.velocity[1] / output.velocity[0] == pytest.approx(0.8 / 0.6)
    assert SafetyReason.SPEED_LIMITED in output.reasons
    message = next(action.message for action in output.actions if action.reason is SafetyReason.SPEED_LIMITED)
    assert "1.0000 m/s above the limit 0.2 m/s" in message


def test_acceleration_is_rate_limited_from_rest():
    safety = ready_filter()
    first = safety.filter([0.2, 0.0], now_s=10.0)
    np.testing.assert_allclose(first.velocity, [0.01, 0.0])  # 1 m/s^2 * 0.01 s
    assert first.reasons == (SafetyReason.ACCELERATION_LIMITED,)
    second = safety.filter([0.2, 0.0], now_s=10.01)
    np.testing.assert_allclose(second.velocity, [0.02, 0.0])


@pytest.mark.parametrize(
    ("position", "desired", "axis"), [((0.29, 0.0), (0.2, 0.0), 0), ((0.0, -0.199), (0.0, -0.2), 1)]
)
def test_approaching_a_wall_slows_down_and_stops_inside(position, desired, axis):
    safety = ready_filter(position)
    now, pusher = 10.0, np.array(position, dtype=float)
    reasons = set()
    for _ in range(300):
        safety.update_pusher(pusher, stamp_s=now)
        output = safety.filter(desired, now_s=now)
        reasons.update(output.reasons)
        pusher = pusher + output.velocity * PERIOD
        assert LIMITS.contains(pusher)
        now += PERIOD
    assert SafetyReason.WORKSPACE_LIMITED in reasons and SafetyReason.WORKSPACE_BRAKE not in reasons
    assert abs(output.velocity[axis]) < 1e-12  # at rest against the wall
    wall = LIMITS.x_max_m if axis == 0 else LIMITS.y_min_m
    assert abs(pusher[axis] - wall) < 1e-3


def test_sliding_along_a_wall_keeps_the_tangential_component():
    safety = ready_filter((0.30, 0.0))
    output, _ = ramp(safety, [0.1, 0.1], 10.0, 30, position=(0.30, 0.0))
    assert output.velocity[0] == 0.0
    assert output.velocity[1] == pytest.approx(0.1)


def test_outside_the_workspace_only_motion_back_inside_is_allowed():
    safety = ready_filter((0.35, 0.0))
    outward = safety.filter([0.1, 0.0], now_s=10.0)
    assert outward.velocity[0] == 0.0
    assert SafetyReason.OUTSIDE_WORKSPACE in outward.reasons
    message = next(
        action.message for action in outward.actions if action.reason is SafetyReason.OUTSIDE_WORKSPACE
    )
    assert "x = 0.3500 m is above the workspace limit 0.3 m" in message
    inward = safety.filter([-0.1, 0.0], now_s=10.01)
    assert inward.velocity[0] < 0.0


def test_a_jump_of_the_estimate_towards_a_wall_brakes_harder_than_the_limit():
    safety = ready_filter((0.0, 0.0))
    output, now = ramp(safety, [0.2, 0.0], 10.0, 40, position=(0.0, 0.0))
    assert output.velocity[0] == pytest.approx(0.2)
    safety.update_pusher((0.2995, 0.0), stamp_s=now)  # the estimate jumps 0.3 m
    braked = safety.filter([0.2, 0.0], now_s=now)
    assert SafetyReason.WORKSPACE_BRAKE in braked.reasons
    assert 0.2995 + braked.velocity[0] * PERIOD <= LIMITS.x_max_m


def test_stale_missing_and_invalid_states_stop_immediately():
    safety = SafetyFilter(LIMITS, command_period_s=PERIOD)
    missing = safety.filter([0.1, 0.0], now_s=10.0)
    assert missing.stopped and missing.reasons == (SafetyReason.STATE_MISSING,)
    safety.update_pusher((0.0, 0.0), stamp_s=10.0)
    moving, now = ramp(safety, [0.2, 0.0], 10.0, 10)
    assert moving.velocity[0] > 0.05
    stale = safety.filter([0.2, 0.0], now_s=10.0 + 0.1 + 1e-6)
    assert stale.stopped and stale.reasons == (SafetyReason.STATE_STALE,)
    np.testing.assert_array_equal(stale.velocity, [0.0, 0.0])  # immediate, not rate limited
    assert "old (limit 0.1 s)" in stale.actions[0].message
    safety.update_pusher((0.0, 0.0), stamp_s=now, valid=False)
    invalid = safety.filter([0.2, 0.0], now_s=now)
    assert invalid.reasons == (SafetyReason.STATE_INVALID,)
    safety.update_pusher((math.nan, 0.0), stamp_s=now)
    assert safety.filter([0.2, 0.0], now_s=now).reasons == (SafetyReason.STATE_INVALID,)
    safety.update_pusher((0.0, 0.0), stamp_s=now + 1.0)  # stamped in the future: clocks disagree
    future = safety.filter([0.2, 0.0], now_s=now)
    assert future.reasons == (SafetyReason.STATE_STALE,) and "in the future" in future.actions[0].message


def test_non_finite_desired_velocity_stops():
    safety = ready_filter()
    output = safety.filter([math.inf, 0.0], now_s=10.0)
    assert output.stopped and output.reasons == (SafetyReason.INVALID_COMMAND,)
    with pytest.raises(ValueError, match="desired_velocity_m_s"):
        safety.filter([0.0, 0.0, 0.0], now_s=10.0)


def test_latched_stop_needs_an_explicit_reset():
    safety = ready_filter()
    _, now = ramp(safety, [0.2, 0.0], 10.0, 10, position=(0.0, 0.0))
    stop = safety.latch_stop("operator pressed stop", now_s=now)
    assert stop.stopped and "operator pressed stop" in stop.actions[0].message
    for step in range(5):
        safety.update_pusher((0.0, 0.0), stamp_s=now + step * PERIOD)
        output = safety.filter([0.2, 0.0], now_s=now + step * PERIOD)
        assert output.stopped and SafetyReason.STOP_LATCHED in output.reasons
    assert safety.stop_latched
    assert safety.reset() is True and not safety.stop_latched
    assert safety.reset() is False
    resumed = safety.filter([0.2, 0.0], now_s=now + 5 * PERIOD)
    np.testing.assert_allclose(resumed.velocity, [0.01, 0.0])  # ramps up from rest


def test_watchdog_stops_when_commands_stop_arriving():
    safety = ready_filter()
    _, now = ramp(safety, [0.1, 0.0], 10.0, 5, position=(0.0, 0.0))
    last = now - PERIOD
    safety.update_pusher((0.0, 0.0), stamp_s=last + 0.05)
    assert safety.watchdog(now_s=last + 0.05) is None  # within the timeout
    stop = safety.watchdog(now_s=last + 0.1 + 1e-3)
    assert stop is not None and stop.stopped and SafetyReason.COMMAND_TIMEOUT in stop.reasons
    np.testing.assert_array_equal(safety.last_velocity, [0.0, 0.0])
    assert safety.watchdog(now_s=last + 1.0) is None  # already stopped


def test_watchdog_stops_on_a_stale_state():
    safety = ready_filter()
    _, now = ramp(safety, [0.1, 0.0], 10.0, 5, position=(0.0, 0.0))
    stop = safety.watchdog(now_s=now - PERIOD + 0.1 + 0.05)  # last estimate at now - PERIOD
    assert stop is not None and SafetyReason.STATE_STALE in stop.reasons


def test_a_command_gap_restarts_the_ramp_from_rest():
    safety = ready_filter()
    output, now = ramp(safety, [0.2, 0.0], 10.0, 20, position=(0.0, 0.0))
    assert output.velocity[0] > 0.15
    later = now + 0.2
    safety.update_pusher((0.0, 0.0), stamp_s=later)
    restarted = safety.filter([0.2, 0.0], now_s=later)
    assert SafetyReason.COMMAND_GAP in restarted.reasons
    np.testing.assert_allclose(restarted.velocity, [0.01, 0.0])


def test_clock_going_backwards_stops_but_tiny_reordering_is_tolerated():
    safety = ready_filter()
    safety.filter([0.1, 0.0], now_s=10.0)
    assert not safety.filter([0.1, 0.0], now_s=10.0 - PERIOD / 2).stopped
    backwards = safety.filter([0.1, 0.0], now_s=9.5)
    assert backwards.stopped and SafetyReason.CLOCK_ERROR in backwards.reasons


def test_latency_compensation_uses_the_commands_since_the_stamp():
    # Fresh estimates while speeding towards the x wall, then the estimate freezes (still younger
    # than the stale timeout): the filter must brake against the position predicted from its own
    # commands since the stamp; the frozen measurement alone would not brake at all.
    limits = SafetyLimits(
        x_min_m=-0.5, x_max_m=0.3, y_min_m=-0.2, y_max_m=0.2, max_speed_m_s=0.5, max_acceleration_m_s2=1.0
    )
    axis_deceleration = limits.max_acceleration_m_s2 / math.sqrt(2)
    safety = SafetyFilter(limits, command_period_s=PERIOD)
    now, pusher = 10.0, np.array([-0.45, 0.0])
    while pusher[0] < 0.09:
        safety.update_pusher(pusher, stamp_s=now)
        output = safety.filter([0.5, 0.0], now_s=now)
        pusher = pusher + output.velocity * PERIOD
        now += PERIOD
    assert output.velocity[0] == pytest.approx(0.5)
    frozen = pusher.copy()
    safety.update_pusher(frozen, stamp_s=now)
    frozen_envelope = max_speed_within(
        limits.x_max_m - frozen[0], deceleration_m_s2=axis_deceleration, period_s=PERIOD
    )
    assert frozen_envelope > 0.5  # without compensation: full speed
    for _ in range(9):  # 90 ms without a new estimate
        position_before = pusher[0]
        output = safety.filter([0.5, 0.0], now_s=now)
        pusher = pusher + output.velocity * PERIOD
        now += PERIOD
    true_envelope = max_speed_within(
        limits.x_max_m - position_before, deceleration_m_s2=axis_deceleration, period_s=PERIOD
    )
    assert output.velocity[0] <= true_envelope + 1e-12
    assert output.velocity[0] < 0.5 - 0.01
    assert SafetyReason.WORKSPACE_LIMITED in output.reasons


def test_limits_validation_names_the_field():
    with pytest.raises(ValueError, match="x_max_m"):
        SafetyLimits(x_min_m=0.0, x_max_m=0.0, y_min_m=-1.0, y_max_m=1.0)
    with pytest.raises(ValueError, match="max_speed_m_s"):
        SafetyLimits(x_min_m=-1, x_max_m=1, y_min_m=-1, y_max_m=1, max_speed_m_s=0.0)
    with pytest.raises(ValueError, match="stale_state_timeout_s"):
        SafetyLimits(x_min_m=-1, x_max_m=1, y_min_m=-1, y_max_m=1, stale_state_timeout_s=math.nan)
    with pytest.raises(ValueError, match="command_period_s"):
        SafetyFilter(LIMITS, command_period_s=0.5)


def test_reason_values_are_stable_strings():
    assert SafetyReason.STATE_STALE.value == "state_stale" and SafetyReason("speed_limited").stops is False
    assert SafetyReason.STOP_LATCHED.stops and SafetyReason.COMMAND_TIMEOUT.stops


@pytest.mark.parametrize(("deceleration", "period"), [(1.0, 0.01), (0.7, 0.002), (5.0, 0.05)])
def test_braking_envelope_hand_checked(deceleration, period):
    quantum = deceleration * period
    # From exactly n quanta the stop takes n, n-1, ..., 1 quanta: a T^2 n (n + 1) / 2.
    assert braking_distance(3 * quantum, deceleration_m_s2=deceleration, period_s=period) == pytest.approx(
        deceleration * period**2 * 6
    )
    assert max_speed_within(
        deceleration * period**2 * 6, deceleration_m_s2=deceleration, period_s=period
    ) == (pytest.approx(3 * quantum))
    assert max_speed_within(0.0, deceleration_m_s2=deceleration, period_s=period) == 0.0
    assert braking_distance(-1.0, deceleration_m_s2=deceleration, period_s=period) == 0.0
