"""Property tests of the safety filter (hypothesis, derandomized): 10,000+ random streams and states.

Examples per test: random states 3000, closed loop 3000, delayed estimates 1000, stale state 2000,
braking envelope 1000 (plus 1000 executor streams in test_execution_velocity_executor.py).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parapush.execution.braking import braking_distance, max_speed_within
from parapush.execution.safety import SafetyFilter, SafetyLimits, SafetyReason

RELATIVE = 1e-9
ABSOLUTE_M = 1e-12


def property_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


@st.composite
def safety_limits(draw) -> SafetyLimits:
    half_x = draw(st.floats(0.05, 0.6))
    half_y = draw(st.floats(0.05, 0.6))
    centre_x = draw(st.floats(-0.5, 0.5))
    centre_y = draw(st.floats(-0.5, 0.5))
    return SafetyLimits(
        x_min_m=centre_x - half_x,
        x_max_m=centre_x + half_x,
        y_min_m=centre_y - half_y,
        y_max_m=centre_y + half_y,
        max_speed_m_s=draw(st.floats(0.02, 0.6)),
        max_acceleration_m_s2=draw(st.floats(0.2, 5.0)),
        stale_state_timeout_s=draw(st.floats(0.03, 0.3)),
        command_timeout_s=draw(st.floats(0.045, 0.3)),
    )


RATES_HZ = st.sampled_from([50.0, 100.0, 125.0, 200.0])


def box(limits: SafetyLimits) -> tuple[np.ndarray, np.ndarray]:
    return np.array([limits.x_min_m, limits.y_min_m]), np.array([limits.x_max_m, limits.y_max_m])


def assert_speed(velocity: np.ndarray, limits: SafetyLimits) -> None:
    assert math.hypot(*velocity) <= limits.max_speed_m_s * (1 + RELATIVE), velocity


def assert_acceleration(
    velocity: np.ndarray, previous: np.ndarray, limits: SafetyLimits, period: float
) -> None:
    change = math.hypot(*(velocity - previous))
    assert change <= limits.max_acceleration_m_s2 * period * (1 + RELATIVE) + 1e-15, (velocity, previous)


def assert_workspace(position: np.ndarray, velocity: np.ndarray, limits: SafetyLimits, period: float) -> None:
    """One period at the command from ``position`` stays in the box, or the command points back in."""
    low, high = box(limits)
    after = position + velocity * period
    for axis in range(2):
        if position[axis] > high[axis]:
            assert velocity[axis] <= 0.0, (position, velocity)
        elif position[axis] < low[axis]:
            assert velocity[axis] >= 0.0, (position, velocity)
        else:
            assert low[axis] - ABSOLUTE_M <= after[axis] <= high[axis] + ABSOLUTE_M, (
                position,
                velocity,
                after,
            )


# -- 1. arbitrary states: estimates jump, go stale, come from the future, vanish --------------------
@property_settings(3000)
@given(limits=safety_limits(), rate_hz=RATES_HZ, seed=st.integers(0, 2**32 - 1))
def test_random_states_and_streams(limits, rate_hz, seed):
    rng = np.random.default_rng(seed)
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    low, high = box(limits)
    margin = 0.2 * (high - low)
    now = float(rng.uniform(0.0, 1000.0))
    previous = np.zeros(2)
    estimate: tuple[np.ndarray, float, bool] | None = None  # position, stamp, valid
    for _ in range(20):
        roll = rng.random()
        if roll < 0.1 and estimate is not None:
            pass  # no new estimate: the last one ages
        elif roll < 0.15:
            estimate = (rng.uniform(low, high), now, False)
            safety.update_pusher(estimate[0], stamp_s=now, valid=False)
        else:
            age_roll = rng.random()
            if age_roll < 0.8:
                age = rng.uniform(0.0, 0.95 * limits.stale_state_timeout_s)
            elif age_roll < 0.95:
                age = rng.uniform(1.01, 3.0) * limits.stale_state_timeout_s
            else:
                age = -rng.uniform(0.0, 2.0) * limits.stale_state_timeout_s
            position = rng.uniform(low - margin, high + margin)
            estimate = (position, now - age, True)
            safety.update_pusher(position, stamp_s=now - age)
        desired = rng.normal(0.0, 2.0 * limits.max_speed_m_s, size=2)
        if rng.random() < 0.03:
            desired[rng.integers(2)] = rng.choice([np.inf, -np.inf, np.nan, 1e9])

        output = safety.filter(desired, now_s=now)
        velocity = output.velocity

        age = None if estimate is None else now - estimate[1]
        must_stop = (
            estimate is None
            or not estimate[2]
            or abs(age) > limits.stale_state_timeout_s
            or not np.all(np.isfinite(desired))
        )
        assert output.stopped == must_stop, (output.reasons, age)
        if must_stop:
            assert velocity[0] == 0.0 and velocity[1] == 0.0
            assert any(reason.stops for reason in output.reasons)
        else:
            assert_speed(velocity, limits)
            assert_workspace(estimate[0], velocity, limits, period)
            baseline = np.zeros(2) if SafetyReason.COMMAND_GAP in output.reasons else previous
            if SafetyReason.WORKSPACE_BRAKE not in output.reasons:
                assert_acceleration(velocity, baseline, limits, period)
        previous = velocity
        gap_roll = rng.random()
        if gap_roll < 0.9:
            now += period
        elif gap_roll < 0.95:
            now += rng.uniform(0.0, period)
        else:
            now += limits.command_timeout_s * rng.uniform(1.01, 3.0)


# -- 2. closed loop: the pusher follows the commands; every limit holds at every step -------------
segment = st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.integers(1, 12))


@property_settings(3000)
@given(
    limits=safety_limits(),
    rate_hz=RATES_HZ,
    start=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
    segments=st.lists(segment, min_size=1, max_size=8),
)
def test_closed_loop_respects_every_limit_at_every_step(limits, rate_hz, start, segments):
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    low, high = box(limits)
    pusher = low + np.array(start) * (high - low)
    previous = np.zeros(2)
    now = 50.0
    for vx, vy, hold in segments:
        desired = np.array([vx, vy]) * 2.0 * limits.max_speed_m_s
        for _ in range(hold):
            safety.update_pusher(pusher, stamp_s=now)
            output = safety.filter(desired, now_s=now)
            velocity = output.velocity
            assert not output.stopped
            assert SafetyReason.WORKSPACE_BRAKE not in output.reasons
            assert_speed(velocity, limits)
            assert_acceleration(velocity, previous, limits, period)
            assert_workspace(pusher, velocity, limits, period)
            pusher = pusher + velocity * period
            assert np.all(pusher >= low - ABSOLUTE_M) and np.all(pusher <= high + ABSOLUTE_M)
            previous = velocity
            now += period


# -- 3. delayed, intermittent estimates: latency compensation keeps the true pusher inside --------
@property_settings(1000)
@given(
    limits=safety_limits(),
    rate_hz=RATES_HZ,
    start=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
    every=st.integers(1, 5),
    delay_fraction=st.floats(0.0, 0.9),
    segments=st.lists(segment, min_size=1, max_size=8),
)
def test_delayed_estimates_keep_the_true_pusher_inside(
    limits, rate_hz, start, every, delay_fraction, segments
):
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    low, high = box(limits)
    pusher = low + np.array(start) * (high - low)
    # Keep every estimate younger than the stale timeout: age <= (delay + every - 1) periods.
    budget = math.floor(0.95 * limits.stale_state_timeout_s / period)
    every = min(every, max(1, budget))
    delay_steps = min(int(delay_fraction * budget), max(0, budget - every))
    history = [(50.0, pusher.copy())]
    previous = np.zeros(2)
    now, step = 50.0, 0
    for vx, vy, hold in segments:
        desired = np.array([vx, vy]) * 2.0 * limits.max_speed_m_s
        for _ in range(hold):
            if step % every == 0:
                stamp, measured = history[max(0, len(history) - 1 - delay_steps)]
                safety.update_pusher(measured, stamp_s=stamp)
            output = safety.filter(desired, now_s=now)
            velocity = output.velocity
            assert not output.stopped, output.reasons
            assert_speed(velocity, limits)
            if SafetyReason.WORKSPACE_BRAKE not in output.reasons:
                assert_acceleration(velocity, previous, limits, period)
            assert_workspace(pusher, velocity, limits, period)  # from the TRUE position
            pusher = pusher + velocity * period
            previous = velocity
            now += period
            step += 1
            history.append((now, pusher.copy()))


# -- 4. stale, invalid or missing state -> exactly zero, whatever came before ---------------------
@property_settings(2000)
@given(
    limits=safety_limits(),
    rate_hz=RATES_HZ,
    warmup=st.lists(st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0)), max_size=10),
    failure=st.sampled_from(["stale", "future", "invalid", "nan"]),
    lateness=st.floats(1.0001, 20.0),
    desired=st.tuples(st.floats(-10.0, 10.0), st.floats(-10.0, 10.0)),
)
def test_stale_state_gives_zero(limits, rate_hz, warmup, failure, lateness, desired):
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    low, high = box(limits)
    centre = (low + high) / 2.0
    now = 20.0
    for vx, vy in warmup:
        safety.update_pusher(centre, stamp_s=now)
        safety.filter([vx, vy], now_s=now)
        now += period
    moving = bool(np.any(safety.last_velocity))
    if failure == "stale":
        safety.update_pusher(centre, stamp_s=now - lateness * limits.stale_state_timeout_s)
    elif failure == "future":
        safety.update_pusher(centre, stamp_s=now + lateness * limits.stale_state_timeout_s)
    elif failure == "invalid":
        safety.update_pusher(centre, stamp_s=now, valid=False)
    else:
        safety.update_pusher([math.nan, centre[1]], stamp_s=now)
    if moving:
        watchdog = safety.watchdog(now_s=now)
        assert watchdog is not None and watchdog.stopped
        assert watchdog.velocity[0] == 0.0 and watchdog.velocity[1] == 0.0
    output = safety.filter(desired, now_s=now)
    assert output.stopped
    assert output.velocity[0] == 0.0 and output.velocity[1] == 0.0
    expected = SafetyReason.STATE_STALE if failure in ("stale", "future") else SafetyReason.STATE_INVALID
    assert expected in output.reasons
    assert all(action.message for action in output.actions)


# -- 5. the braking envelope is the exact inverse of the braking distance -------------------------
@property_settings(1000)
@given(
    distance=st.floats(0.0, 2.0),
    deceleration=st.floats(0.05, 20.0),
    period=st.floats(0.0005, 0.1),
)
def test_braking_envelope_is_the_largest_safe_speed(distance, deceleration, period):
    speed = max_speed_within(distance, deceleration_m_s2=deceleration, period_s=period)
    assert braking_distance(speed, deceleration_m_s2=deceleration, period_s=period) <= distance * (
        1 + RELATIVE
    )
    assert speed * period <= distance * (1 + RELATIVE)
    if distance > 0:
        faster = speed * (1 + 1e-6) + 1e-12
        assert braking_distance(faster, deceleration_m_s2=deceleration, period_s=period) > distance
    # one period later, one deceleration step less is safe again (the invariant the filter relies on)
    later = braking_distance(
        max(0.0, speed - deceleration * period), deceleration_m_s2=deceleration, period_s=period
    )
    assert later <= max(0.0, distance - speed * period) * (1 + RELATIVE) + 1e-15
