"""Property tests of the safety filter (hypothesis, derandomized): 10,000+ random streams and states.

Examples per test: random states 3000, closed loop 1000 (hypothesis-structured streams, which
shrink) + 2500 (seed-driven streams, cheaper to generate), delayed estimates 1000, stale state
2000, braking envelope 1000; plus 1000 executor streams in test_execution_velocity_executor.py.
Limits come from 64 seeded random limit sets (drawing each limit separately made hypothesis's
data generation the bottleneck).
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safety_limits_fixtures import box_limits

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


def _limit_sets(count: int, seed: int) -> list[SafetyLimits]:
    rng = np.random.default_rng(seed)
    sets = [  # edge cases first (hypothesis shrinks towards them): tiny box, fast and weak, slow and strong
        SafetyLimits(x_min_m=-0.02, x_max_m=0.02, y_min_m=-0.5, y_max_m=0.5, max_speed_m_s=0.6),
        SafetyLimits(
            x_min_m=0.0, x_max_m=0.3, y_min_m=0.0, y_max_m=0.2, max_speed_m_s=0.6, max_acceleration_m_s2=0.2
        ),
        box_limits(half_x_m=1.0, half_y_m=1.0, max_speed_m_s=0.02, max_acceleration_m_s2=5.0),
    ]
    while len(sets) < count:
        half = rng.uniform(0.03, 0.6, size=2)
        centre = rng.uniform(-0.5, 0.5, size=2)
        sets.append(
            box_limits(
                (float(centre[0]), float(centre[1])),
                half_x_m=float(half[0]),
                half_y_m=float(half[1]),
                max_speed_m_s=float(rng.uniform(0.02, 0.6)),
                max_acceleration_m_s2=float(rng.uniform(0.2, 5.0)),
                stale_state_timeout_s=float(rng.uniform(0.03, 0.3)),
                command_timeout_s=float(rng.uniform(0.045, 0.3)),
            )
        )
    return sets


LIMITS = st.sampled_from(_limit_sets(64, seed=20261122))
RATES_HZ = st.sampled_from([50.0, 100.0, 125.0, 200.0])
SEEDS = st.integers(0, 2**32 - 1)
UNIT = st.floats(0.0, 1.0)


# -- checks (plain floats: cheap per step) -------------------------------------------------------
def assert_speed(vx: float, vy: float, limits: SafetyLimits) -> None:
    assert math.hypot(vx, vy) <= limits.max_speed_m_s * (1 + RELATIVE), (vx, vy)


def assert_acceleration(
    vx: float, vy: float, previous: tuple[float, float], limits: SafetyLimits, period: float
) -> None:
    change = math.hypot(vx - previous[0], vy - previous[1])
    assert change <= limits.max_acceleration_m_s2 * period * (1 + RELATIVE) + 1e-15, ((vx, vy), previous)


def assert_workspace(x: float, y: float, vx: float, vy: float, limits: SafetyLimits, period: float) -> None:
    """One period at the command from (x, y) stays in the box, or the command points back in."""
    for position, velocity, low, high in (
        (x, vx, limits.x_min_m, limits.x_max_m),
        (y, vy, limits.y_min_m, limits.y_max_m),
    ):
        if position > high:
            assert velocity <= 0.0, (position, velocity, high)
        elif position < low:
            assert velocity >= 0.0, (position, velocity, low)
        else:
            after = position + velocity * period
            assert low - ABSOLUTE_M <= after <= high + ABSOLUTE_M, (position, velocity, after, low, high)


def point_in_box(limits: SafetyLimits, fraction_x: float, fraction_y: float) -> tuple[float, float]:
    return (
        limits.x_min_m + fraction_x * (limits.x_max_m - limits.x_min_m),
        limits.y_min_m + fraction_y * (limits.y_max_m - limits.y_min_m),
    )


def seeded_segments(rng: np.random.Generator) -> list[tuple[float, float, int]]:
    """1-8 segments: a desired velocity (units of twice the speed limit) held for 1-12 ticks."""
    count = int(rng.integers(1, 9))
    velocities = rng.uniform(-1.0, 1.0, size=(count, 2))
    holds = rng.integers(1, 13, size=count)
    return [(float(v[0]), float(v[1]), int(h)) for v, h in zip(velocities, holds, strict=True)]


# -- 1. arbitrary states: estimates jump, go stale, come from the future, vanish --------------------
@property_settings(3000)
@given(limits=LIMITS, rate_hz=RATES_HZ, seed=SEEDS)
def test_random_states_and_streams(limits, rate_hz, seed):
    rng = np.random.default_rng(seed)
    period = 1.0 / rate_hz
    timeout = limits.stale_state_timeout_s
    safety = SafetyFilter(limits, command_period_s=period)
    low = np.array([limits.x_min_m, limits.y_min_m])
    high = np.array([limits.x_max_m, limits.y_max_m])
    margin = 0.2 * (high - low)
    now = float(rng.uniform(0.0, 1000.0))
    previous = (0.0, 0.0)
    estimate: tuple[float, float, float, bool] | None = None  # x, y, stamp, valid
    for _ in range(20):
        roll = rng.random()
        if roll < 0.1 and estimate is not None:
            pass  # no new estimate: the last one ages
        elif roll < 0.15:
            x, y = rng.uniform(low, high)
            estimate = (float(x), float(y), now, False)
            safety.update_pusher((x, y), stamp_s=now, valid=False)
        else:
            age_roll = rng.random()
            if age_roll < 0.8:
                age = rng.uniform(0.0, 0.95 * timeout)
            elif age_roll < 0.95:
                age = rng.uniform(1.01, 3.0) * timeout
            else:
                age = -rng.uniform(0.0, 2.0) * timeout
            x, y = rng.uniform(low - margin, high + margin)
            estimate = (float(x), float(y), now - age, True)
            safety.update_pusher((x, y), stamp_s=now - age)
        desired = rng.normal(0.0, 2.0 * limits.max_speed_m_s, size=2)
        if rng.random() < 0.03:
            desired[rng.integers(2)] = rng.choice([np.inf, -np.inf, np.nan, 1e9])

        output = safety.filter(desired, now_s=now)
        vx, vy = float(output.velocity[0]), float(output.velocity[1])

        must_stop = (
            estimate is None
            or not estimate[3]
            or abs(now - estimate[2]) > timeout
            or not (math.isfinite(desired[0]) and math.isfinite(desired[1]))
        )
        assert output.stopped == must_stop, (output.reasons, estimate, now)
        if must_stop:
            assert vx == 0.0 and vy == 0.0
            assert any(reason.stops for reason in output.reasons)
        else:
            assert_speed(vx, vy, limits)
            assert_workspace(estimate[0], estimate[1], vx, vy, limits, period)
            baseline = (0.0, 0.0) if SafetyReason.COMMAND_GAP in output.reasons else previous
            if SafetyReason.WORKSPACE_BRAKE not in output.reasons:
                assert_acceleration(vx, vy, baseline, limits, period)
        assert all(action.message for action in output.actions)
        previous = (vx, vy)
        gap_roll = rng.random()
        if gap_roll < 0.9:
            now += period
        elif gap_roll < 0.95:
            now += rng.uniform(0.0, period)
        else:
            now += limits.command_timeout_s * rng.uniform(1.01, 3.0)


# -- 2. closed loop: the pusher follows the commands; every limit holds at every step -------------
def run_closed_loop(limits, rate_hz, start, segments) -> None:
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    x, y = point_in_box(limits, *start)
    previous = (0.0, 0.0)
    now = 50.0
    scale = 2.0 * limits.max_speed_m_s
    for fraction_x, fraction_y, hold in segments:
        desired = (fraction_x * scale, fraction_y * scale)
        for _ in range(hold):
            safety.update_pusher((x, y), stamp_s=now)
            output = safety.filter(desired, now_s=now)
            vx, vy = float(output.velocity[0]), float(output.velocity[1])
            assert not output.stopped, output.reasons
            assert SafetyReason.WORKSPACE_BRAKE not in output.reasons
            assert_speed(vx, vy, limits)
            assert_acceleration(vx, vy, previous, limits, period)
            assert_workspace(x, y, vx, vy, limits, period)
            x, y = x + vx * period, y + vy * period
            previous = (vx, vy)
            now += period


segment = st.tuples(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.integers(1, 12))


@property_settings(1000)
@given(
    limits=LIMITS,
    rate_hz=RATES_HZ,
    start=st.tuples(UNIT, UNIT),
    segments=st.lists(segment, min_size=1, max_size=8),
)
def test_closed_loop_respects_every_limit_at_every_step(limits, rate_hz, start, segments):
    run_closed_loop(limits, rate_hz, start, segments)


@property_settings(2500)
@given(limits=LIMITS, rate_hz=RATES_HZ, seed=SEEDS)
def test_closed_loop_seeded_streams(limits, rate_hz, seed):
    rng = np.random.default_rng(seed)
    start = rng.uniform(0.0, 1.0, size=2)
    start[rng.random(2) < 0.1] = rng.choice([0.0, 1.0])  # sometimes on a wall
    run_closed_loop(limits, rate_hz, (float(start[0]), float(start[1])), seeded_segments(rng))


# -- 3. delayed, intermittent estimates: latency compensation keeps the true pusher inside --------
@property_settings(1000)
@given(limits=LIMITS, rate_hz=RATES_HZ, every=st.integers(1, 5), delay_fraction=UNIT, seed=SEEDS)
def test_delayed_estimates_keep_the_true_pusher_inside(limits, rate_hz, every, delay_fraction, seed):
    rng = np.random.default_rng(seed)
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    # Keep every estimate younger than the stale timeout: age <= (delay + every - 1) periods.
    budget = math.floor(0.95 * limits.stale_state_timeout_s / period)
    every = min(every, max(1, budget))
    delay_steps = min(int(delay_fraction * budget), max(0, budget - every))
    x, y = point_in_box(limits, *rng.uniform(0.0, 1.0, size=2))
    now, step = 50.0, 0
    history = [(now, x, y)]
    previous = (0.0, 0.0)
    scale = 2.0 * limits.max_speed_m_s
    for fraction_x, fraction_y, hold in seeded_segments(rng):
        desired = (fraction_x * scale, fraction_y * scale)
        for _ in range(hold):
            if step % every == 0:
                stamp, measured_x, measured_y = history[max(0, len(history) - 1 - delay_steps)]
                safety.update_pusher((measured_x, measured_y), stamp_s=stamp)
            output = safety.filter(desired, now_s=now)
            vx, vy = float(output.velocity[0]), float(output.velocity[1])
            assert not output.stopped, output.reasons
            assert_speed(vx, vy, limits)
            if SafetyReason.WORKSPACE_BRAKE not in output.reasons:
                assert_acceleration(vx, vy, previous, limits, period)
            assert_workspace(x, y, vx, vy, limits, period)  # from the TRUE position
            x, y = x + vx * period, y + vy * period
            previous = (vx, vy)
            now += period
            step += 1
            history.append((now, x, y))


# -- 4. stale, invalid or missing state -> exactly zero, whatever came before ---------------------
@property_settings(2000)
@given(
    limits=LIMITS,
    rate_hz=RATES_HZ,
    warmup_steps=st.integers(0, 25),
    failure=st.sampled_from(["stale", "future", "invalid", "nan"]),
    lateness=st.floats(1.0001, 20.0),
    seed=SEEDS,
)
def test_stale_state_gives_zero(limits, rate_hz, warmup_steps, failure, lateness, seed):
    rng = np.random.default_rng(seed)
    period = 1.0 / rate_hz
    safety = SafetyFilter(limits, command_period_s=period)
    centre = point_in_box(limits, 0.5, 0.5)
    now = 20.0
    for desired in rng.uniform(-1.0, 1.0, size=(warmup_steps, 2)):
        safety.update_pusher(centre, stamp_s=now)
        safety.filter(desired, now_s=now)
        now += period
    moving = bool(np.any(safety.last_velocity))
    if failure == "stale":
        safety.update_pusher(centre, stamp_s=now - lateness * limits.stale_state_timeout_s)
    elif failure == "future":
        safety.update_pusher(centre, stamp_s=now + lateness * limits.stale_state_timeout_s)
    elif failure == "invalid":
        safety.update_pusher(centre, stamp_s=now, valid=False)
    else:
        safety.update_pusher((math.nan, centre[1]), stamp_s=now)
    if moving:
        watchdog = safety.watchdog(now_s=now)
        assert watchdog is not None and watchdog.stopped
        assert watchdog.velocity[0] == 0.0 and watchdog.velocity[1] == 0.0
    output = safety.filter(rng.normal(0.0, 5.0, size=2), now_s=now)
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
